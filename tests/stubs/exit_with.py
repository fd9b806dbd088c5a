"""Print a line to each stream, then exit with argv[1] (or die by signal with 'sig:N')."""

import os
import sys

print("to stdout", flush=True)
print("to stderr", file=sys.stderr, flush=True)
code = sys.argv[1]
if code.startswith("sig:"):
    os.kill(os.getpid(), int(code[4:]))
sys.exit(int(code))
