"""A deterministic "flaky" scorer: which runs fail is chosen by EVALRUN_REPEAT.

FLAKY_FAIL=1,3,5    the check "answer is right" fails on those repeats
FLAKY_ABSENT=2      the check "sometimes there" is missing from those repeats' reports
FLAKY_CRASH=4       those repeats exit 3 without writing a report
FLAKY_HANG=2        those repeats sleep for a minute (to be interrupted)
FLAKY_LOG=PATH      each run appends "repeat pid workdir-was-empty" to PATH
"""

import json
import os
import sys

repeat = int(os.environ["EVALRUN_REPEAT"])


def chosen(var: str) -> set[int]:
    return {int(x) for x in os.environ.get(var, "").split(",") if x.strip()}


workdir = os.environ["EVALRUN_WORKDIR"]
was_empty = not os.listdir(workdir)
with open(os.path.join(workdir, "left-behind"), "w") as fh:  # the next run must not see this
    fh.write(str(repeat))
if os.environ.get("FLAKY_LOG"):
    with open(os.environ["FLAKY_LOG"], "a") as fh:
        fh.write(f"{repeat} {os.getpid()} {int(was_empty)}\n")
if repeat in chosen("FLAKY_HANG"):
    import time

    time.sleep(60)
if repeat in chosen("FLAKY_CRASH"):
    raise SystemExit(f"KeyError: 'tenant' (crash on repeat {repeat})")
fails = repeat in chosen("FLAKY_FAIL")
checks = [
    {"name": "answer is right", "assertions": 2, "passed": not fails,
     **({"message": f"wrong answer on repeat {repeat}"} if fails else {})},
    {"name": "workdir is fresh", "assertions": 1, "passed": was_empty},
]
if repeat not in chosen("FLAKY_ABSENT"):
    checks.append({"name": "sometimes there", "assertions": 1, "passed": True})
with open(os.environ["EVALRUN_REPORT"], "w") as fh:
    json.dump({"checks": checks}, fh)
sys.exit(0)
