"""A TAP scorer's stdout is saved only up to what evalrun reads (32 MiB, and one byte to tell it is more).

Real child processes: ``evalrun.process`` saves at most ``stdout_limit`` bytes
of stdout to the file and drains the rest (the scorer never blocks on a full
pipe); through the CLI, a TAP scorer that floods stdout past the limit gets
the same verdict as before ("larger than 32 MiB"), its stream saved no larger.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness import eval_entry
from evalrun.process import ProcessRequest, run_process
from evalrun.reports_in.parsed import REPORT_LIMIT

ENV = {"PATH": os.environ.get("PATH", os.defpath)}
FLOOD = "import sys\nline = b'# ' + b'x' * 65533 + b'\\n'\nfor _ in range(64):\n    sys.stdout.buffer.write(line)\n"


def test_stdout_past_the_limit_is_drained_but_not_saved(tmp_path: Path) -> None:
    saved = tmp_path / "stdout"
    outcome = run_process(ProcessRequest(
        argv=(sys.executable, "-c", FLOOD), cwd=tmp_path, env=ENV, timeout=60.0,
        stdout_path=saved, stdout_limit=1024 * 1024 + 1,
    ))
    assert saved.stat().st_size == 1024 * 1024 + 1  # 4 MiB written, the limit saved
    assert outcome.exit_code == 0 and outcome.stdout_bytes == 64 * 65536  # never blocked: all of it was read
    assert outcome.stdout_path_error is None


def test_stdout_within_the_limit_is_saved_whole(tmp_path: Path) -> None:
    saved = tmp_path / "stdout"
    outcome = run_process(ProcessRequest(
        argv=(sys.executable, "-c", "import sys; sys.stdout.write('ok 1\\n' * 1000)"), cwd=tmp_path, env=ENV,
        timeout=60.0, stdout_path=saved, stdout_limit=5000,
    ))
    assert saved.read_bytes() == b"ok 1\n" * 1000 and outcome.exit_code == 0


SIZE_PROBE = """
import os, sys, time
from pathlib import Path
saved = Path(os.environ["EVALRUN_REPORT"]).parent / "stdout"  # where evalrun saves a TAP stream
line = b"# " + b"x" * 65533 + b"\\n"
sys.stdout.buffer.write(b"1..1\\nok 1 - first\\n")
for _ in range(FLOOD_LINES):
    sys.stdout.buffer.write(line)
    Path("saved-size").write_text(str(saved.stat().st_size))
"""


def test_a_tap_scorer_flooding_stdout_is_saved_only_up_to_the_read_limit_and_told_so(project):
    lines = REPORT_LIMIT // 65536 + 64  # 36 MiB: past the limit, not more than a test can afford
    proj = project({
        "manifest.toml": eval_entry("flood", extra='format = "tap"\ntimeout = 120\n'),
        "evals/flood/score.py": SIZE_PROBE.replace("FLOOD_LINES", str(lines)),
    })
    run = proj.run("t1")
    assert run.code == 1, run.output
    result = proj.eval_result("flood")
    assert result["status"] == "failed", result
    assert result["message"].startswith("the TAP output is larger than 32 MiB"), result["message"]
    assert [c["name"] for c in result["checks"]] == ["first"]
    # The size the scorer saw after its last write: never past what evalrun reads.
    assert int((proj.root / "evals/flood/saved-size").read_text()) <= REPORT_LIMIT + 1
