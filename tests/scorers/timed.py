"""Leaves a marker line when it starts, then takes $SLEEP seconds: shows the order scorers start in.

With $WAIT_FOR set, a scorer other than that eval also waits (at most 10 s) until that eval's marker is
written before it ends: its worker takes no next eval before then, so "started among the first two" holds
however slowly the machine starts a process.
"""
import os, time
from _report import write
me, marker = os.environ["EVALRUN_EVAL"], os.environ["MARKER"]
open(marker, "a").write(me + "\n")
time.sleep(float(os.environ.get("SLEEP", "0")))
wait_for, deadline = os.environ.get("WAIT_FOR"), time.time() + 10
while wait_for and wait_for != me and wait_for not in open(marker).read().split() and time.time() < deadline:
    time.sleep(0.01)
write([{"name": "ran", "assertions": 1, "passed": True}])
