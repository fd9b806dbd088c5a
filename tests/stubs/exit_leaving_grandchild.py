"""Exit 0 at once, leaving a grandchild that holds stdout/stderr open.

argv[1]: file to record the grandchild's pid in.
argv[2] (optional): "ignore-term" makes the grandchild ignore SIGTERM;
"setsid" makes it leave the process group first (as a daemon does), and
"setsid-ignore-term" both. The child exits only once the grandchild is set up.
"""

import os
import signal
import sys
import time

mode = sys.argv[2] if len(sys.argv) > 2 else "default"
if mode.endswith("ignore-term"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(ready_r)
    if mode.startswith("setsid"):
        os.setsid()
    os.close(ready_w)  # set up: the child may go
    time.sleep(120)
    os._exit(0)
os.close(ready_w)
os.read(ready_r, 1)  # b"" once the grandchild has closed its end
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("child done", flush=True)
os._exit(0)
