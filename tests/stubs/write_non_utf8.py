"""Write bytes that are not valid UTF-8 to both streams."""

import os

os.write(1, b"out \xff\xfe end\n")
os.write(2, b"err \xc3\x28 end\n")
