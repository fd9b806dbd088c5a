"""Records when it ran, to show which scorers overlapped."""
import os, time
from _report import write
start = time.time()
time.sleep(0.5)
with open(os.path.join(os.environ["LOGDIR"], os.environ["EVALRUN_EVAL"]), "w") as fh:
    fh.write(f"{start} {time.time()}")
write([{"name": "ran", "assertions": 1, "passed": True}])
