# Written by hand, not with the SDK: the SDK would already mark the check as
# failed, and this case is about the runner's own rule.
import json
import os

report = {"checks": [{"name": "totals add up", "assertions": 0, "passed": True}]}
with open(os.environ["EVALRUN_REPORT"], "w") as fh:
    json.dump(report, fh)
