"""Fork a grandchild that ignores SIGTERM, record its pid in argv[1], then hang.

SIGTERM is ignored *before* the fork, so the grandchild can never be caught
with the default handler; the child restores the default for itself.
"""

import os
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    time.sleep(120)
    os._exit(0)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("hanging", flush=True)
time.sleep(120)
