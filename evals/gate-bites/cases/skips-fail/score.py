import json
import os

open("started.marker", "a").write(os.environ["EVALRUN_EVAL"] + "\n")
with open(os.environ["EVALRUN_REPORT"], "w") as fh:
    json.dump({"checks": [{"name": "totals add up", "assertions": 2, "passed": True}]}, fh)
