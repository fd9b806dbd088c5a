# A scorer in plain sh: the contract is a JSON file, not a Python API.
set -eu
test "$((1 + 1))" -eq 2
printf '{"checks": [{"name": "two lines counted", "assertions": 1, "passed": true}]}\n' > "$EVALRUN_REPORT"
