import json
import os
import sys

report = {"checks": [{"name": "totals add up", "assertions": 1, "passed": True}]}
with open(os.environ["EVALRUN_REPORT"], "w") as fh:
    json.dump(report, fh)
sys.exit(3)
