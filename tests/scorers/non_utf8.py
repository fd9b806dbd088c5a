import os, sys
os.write(1, b"bytes \xff\xfe not utf-8\n")
sys.exit(2)
