"""Driver, not a scorer: run flood_stdout.py through run_process, report peak RSS.

argv[1]: bytes to flood. Prints JSON with this process's peak RSS (VmHWM, KiB)
and what the outcome saw, so a test can check memory stays bounded. VmHWM, not
ru_maxrss: Linux carries a parent's peak into ru_maxrss across fork and exec, so
a test worker that had grown would be measured instead of this process.
"""

import json
import os
import sys
from pathlib import Path

from evalrun.process import ProcessRequest, run_process

def peak_rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


here = Path(__file__).parent
outcome = run_process(
    ProcessRequest(
        argv=(sys.executable, str(here / "flood_stdout.py"), sys.argv[1]),
        cwd=here,
        env=dict(os.environ),
        timeout=60,
    )
)
print(
    json.dumps(
        {
            "maxrss_kib": peak_rss_kib(),
            "exit_code": outcome.exit_code,
            "stdout_bytes": outcome.stdout_bytes,
            "tail_len": len(outcome.stdout_tail),
            "tail_end": outcome.stdout_tail[-11:].decode(),
        }
    )
)
