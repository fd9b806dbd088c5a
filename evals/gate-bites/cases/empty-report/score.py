import json
import os

with open(os.environ["EVALRUN_REPORT"], "w") as fh:
    json.dump({"checks": []}, fh)
