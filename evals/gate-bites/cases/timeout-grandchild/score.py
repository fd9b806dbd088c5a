# SIGTERM is ignored before the fork, so the grandchild never has the default
# handler: only the group-wide SIGKILL after the grace period can stop it.
import os
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    time.sleep(120)
    os._exit(0)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
with open("grandchild.pid.tmp", "w") as fh:
    fh.write(str(pid))
os.replace("grandchild.pid.tmp", "grandchild.pid")
time.sleep(120)
