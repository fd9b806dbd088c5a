"""Shared by the stub scorers: write a report the way a scorer would."""
import json
import os


def write(checks, metrics=None):
    with open(os.environ["EVALRUN_REPORT"], "w") as fh:
        json.dump({"checks": checks, "metrics": metrics or {}}, fh)
