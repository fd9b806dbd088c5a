"""Runs sharing a fixed report path take turns (evalrun.run.execute.FixedReports); others never wait."""

from __future__ import annotations

import threading
from pathlib import Path

from evalrun.run.execute import FixedReports


def test_a_run_waiting_for_a_shared_report_path_gives_up_when_cancelled(tmp_path: Path) -> None:
    turns, cancel = FixedReports(), threading.Event()
    with turns.hold(tmp_path / "report.xml", cancel) as first:
        assert first
        with turns.hold(tmp_path / "other.xml", cancel) as other, turns.hold(None, cancel) as own:
            assert other and own  # another path, or a report of its own: no wait
        cancel.set()
        with turns.hold(tmp_path / "sub" / ".." / "report.xml", cancel) as second:
            assert not second  # the same file under another spelling waits, and Ctrl-C ends the wait
    with turns.hold(tmp_path / "report.xml", threading.Event()) as again:
        assert again  # released when the first run's turn ended
