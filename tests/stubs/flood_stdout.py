"""Write argv[1] bytes of a counting pattern to stdout, then a marker line.

Large os.write calls keep a 1 GiB flood down to a second or two.
"""

import os
import sys

total = int(sys.argv[1])
block = bytes(range(256)) * 4096  # 1 MiB, so byte i of the stream is i % 256
view = memoryview(block)
left = total
while left:
    left -= os.write(1, view[: min(left, len(block))])
os.write(1, b"STDOUT-END\n")
