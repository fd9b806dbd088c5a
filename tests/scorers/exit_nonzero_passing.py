import sys
from _report import write
write([{"name": "adds up", "assertions": 2, "passed": True}])
print("cleanup failed: database is locked", file=sys.stderr)
sys.exit(3)
