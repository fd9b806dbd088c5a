"""Write argv[1] bytes to stderr before anything to stdout, then end both.

A runner that reads stdout to the end before stderr deadlocks here.
"""

import os
import sys

total = int(sys.argv[1])
block = b"e" * (1024 * 1024)
left = total
while left:
    left -= os.write(2, block[: min(left, len(block))])
os.write(1, b"STDOUT-END\n")
os.write(2, b"STDERR-END\n")
