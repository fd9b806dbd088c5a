"""Exit 0 at once, leaving a grandchild that holds stdout/stderr open.

argv[1]: file to record the grandchild's pid in.
argv[2] (optional): "ignore-term" makes the grandchild ignore SIGTERM.
"""

import os
import signal
import sys
import time

if len(sys.argv) > 2 and sys.argv[2] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    time.sleep(120)
    os._exit(0)
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("child done", flush=True)
os._exit(0)
