"""Leaves a marker file: proves whether a scorer was started at all."""
import os
from _report import write
open(os.environ["MARKER"], "a").write(os.environ["EVALRUN_EVAL"] + "\n")
write([{"name": "ran", "assertions": 1, "passed": True}])
