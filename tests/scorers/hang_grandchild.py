"""Starts a grandchild that ignores SIGTERM, records its pid, then hangs."""
import os
import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
with open(os.environ.get("PIDFILE", "grandchild.pid"), "w") as fh:
    fh.write(str(child.pid))
open(os.environ.get("STARTED", "started"), "w").close()
time.sleep(600)
