"""Driver, not a scorer: run flood_stdout.py through run_process, report peak RSS.

argv[1]: bytes to flood. Prints JSON with this process's ru_maxrss (KiB on
Linux) and what the outcome saw, so a test can check memory stays bounded.
"""

import json
import os
import resource
import sys
from pathlib import Path

from evalrun.process import ProcessRequest, run_process

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
            "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "exit_code": outcome.exit_code,
            "stdout_bytes": outcome.stdout_bytes,
            "tail_len": len(outcome.stdout_tail),
            "tail_end": outcome.stdout_tail[-11:].decode(),
        }
    )
)
