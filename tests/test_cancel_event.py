"""A CancelEvent wakes the supervisor of a running child at once; nothing polls it (evalrun.process)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

import evalrun.process as process
from evalrun.process import CancelEvent, ProcessRequest, run_process


def test_setting_a_cancel_event_stops_a_quiet_child_without_polling(tmp_path: Path, monkeypatch) -> None:
    # Were the event polled, a poll this rare would leave the child to its deadline: timed out, not cancelled.
    monkeypatch.setattr(process, "CANCEL_POLL_S", 1000.0)
    cancel = CancelEvent()
    try:
        request = ProcessRequest(argv=(sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"),
                                 cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=20, grace=1.0)
        timer = threading.Timer(0.5, cancel.set)
        timer.start()
        outcome = run_process(request, cancel)
        timer.join()
    finally:
        cancel.close()
    assert outcome.cancelled and not outcome.timed_out
    assert outcome.exit_code is not None and outcome.exit_code < 0  # stopped by our signal


def test_a_cancel_event_set_before_the_start_starts_nothing(tmp_path: Path) -> None:
    cancel = CancelEvent()
    cancel.set()
    cancel.set()  # setting twice is harmless
    try:
        outcome = run_process(ProcessRequest(argv=("true",), cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=5),
                              cancel)
    finally:
        cancel.close()
    assert outcome.cancelled and outcome.exit_code is None and outcome.pid is None


@pytest.mark.parametrize("runs", [3])
def test_one_cancel_event_serves_many_children_in_turn_while_unset(tmp_path: Path, runs: int) -> None:
    cancel = CancelEvent()
    try:
        outcomes = [
            run_process(ProcessRequest(argv=("sh", "-c", "echo hi"), cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                                       timeout=10), cancel)
            for _ in range(runs)
        ]
    finally:
        cancel.close()
    assert [(o.exit_code, o.stdout_tail, o.cancelled) for o in outcomes] == [(0, b"hi\n", False)] * runs
