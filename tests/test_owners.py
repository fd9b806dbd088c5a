"""Whether a run is alive: the owner lock it holds while it lives, and what a pid tells where the lock cannot.

``/proc`` is hidden from evalrun's layers here by replacing the one function they
read it through (``proc_stat``) with one that finds nothing, as on macOS; the
end-to-end runs on a simulated macOS are in tests/cli/test_killed_run.py,
tests/cli/test_concurrent_runs.py and tests/services/test_services.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import finishes
from hypothesis import given
from hypothesis import strategies as st

import evalrun.leftovers as leftovers
import evalrun.owners as owners
from harness.said import reaped
from evalrun.leftovers import remove_pidfile, write_pidfile
from evalrun.owners import Liveness, hold_owner_lock, let_go_owner_lock, lock_state, pid_state
from evalrun.process_table import parse_etime, parse_ps

HOLDER = ("import sys, time; from pathlib import Path; from evalrun.owners import hold_owner_lock\n"
          "print(hold_owner_lock(Path(sys.argv[1]), 'x'), flush=True); time.sleep(600)\n")


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """evalrun's /proc reads find nothing, as on macOS."""
    for module in (owners, leftovers):
        monkeypatch.setattr(module, "proc_stat", lambda pid: None)


def gone_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_lock_reads_alive_while_its_holder_lives_and_dead_once_it_is_sigkilled(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        name = holder.stdout.readline().strip()
        assert lock_state(tmp_path / name) is Liveness.ALIVE
        assert lock_state(tmp_path / name) is Liveness.ALIVE  # asking takes nothing from the holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    assert lock_state(tmp_path / name) is Liveness.DEAD


def test_this_processes_own_lock_reads_alive_and_goes_with_its_last_user(tmp_path: Path) -> None:
    name = hold_owner_lock(tmp_path, "a")
    assert hold_owner_lock(tmp_path, "b") == name
    assert lock_state(tmp_path / name) is Liveness.ALIVE
    let_go_owner_lock(tmp_path, "a")
    assert lock_state(tmp_path / name) is Liveness.ALIVE
    let_go_owner_lock(tmp_path, "b")
    assert list(tmp_path.iterdir()) == []


def test_no_lock_file_a_fifo_or_a_folder_cannot_tell(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    for name in ("missing", "fifo", "folder"):
        assert finishes(lambda: lock_state(tmp_path / name)) is Liveness.UNKNOWN


def test_without_proc_a_gone_pid_is_dead_and_a_live_one_unknown_never_dead(no_proc) -> None:
    assert pid_state(gone_pid(), 0) is Liveness.DEAD
    assert pid_state(os.getpid(), 0) is Liveness.UNKNOWN
    assert pid_state(1, 0) is Liveness.UNKNOWN


def _record(state: Path, name: str, pid: int, owner: int, **fields: object) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    path = state / f"{name}.{owner}.json"
    path.write_text(json.dumps({"version": 1, "name": name, "kind": "run", "pid": pid, "pgid": pid, "proc_start": 0,
                                "owner_pid": owner, "owner_start": 0, "data_dir": None, **fields}))
    return path


def test_without_proc_a_record_whose_owner_may_live_is_left_alone_and_said(tmp_path: Path, no_proc) -> None:
    service = subprocess.Popen(["sleep", "60"], start_new_session=True)
    precious = tmp_path / "cluster"
    precious.mkdir()
    (precious / leftovers.MARKER).write_text("db\n")
    try:
        # No owner lock (an older evalrun's record) and its owner's pid is taken: ours, or a reused one.
        record = _record(tmp_path / "state", "db", service.pid, os.getpid(), data_dir=str(precious),
                         spawned_at=time.time())
        lines = reaped(tmp_path / "state")
        assert lines == [f"left service db (pgid {service.pid}) alone: cannot tell whether the run that started it "
                         f"(pid {os.getpid()}) still runs; if it does not, stop group {service.pid} and remove {record}"]
        assert record.exists() and precious.is_dir() and service.poll() is None
    finally:
        service.kill()
        service.wait()


def test_without_proc_a_dead_runs_record_without_a_spawn_time_is_left_alone_and_said(tmp_path: Path, no_proc) -> None:
    precious = tmp_path / "cluster"
    precious.mkdir()
    (precious / leftovers.MARKER).write_text("db\n")
    record = _record(tmp_path / "state", "db", os.getpid(), gone_pid(), data_dir=str(precious))
    lines = reaped(tmp_path / "state")
    assert lines == [f"left service db (pgid {os.getpid()}) of a killed run alone: cannot tell whether it still runs "
                     f"on this system; stop group {os.getpid()} if it does, and remove {record}"]
    assert record.exists() and precious.is_dir()


def test_without_proc_a_pid_reused_since_the_spawn_is_never_signalled(tmp_path: Path, no_proc) -> None:
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        # The record's process was spawned an hour before this one started: ps tells them apart.
        _record(tmp_path / "state", "api", bystander.pid, gone_pid(), spawned_at=time.time() - 3600)
        assert reaped(tmp_path / "state") == []
        assert list((tmp_path / "state").iterdir()) == []
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_without_proc_a_dead_runs_service_is_stopped_and_its_lock_swept(tmp_path: Path, no_proc) -> None:
    state = tmp_path / "state"
    state.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(state)], stdout=subprocess.PIPE, text=True)
    service = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        lock = holder.stdout.readline().strip()
        _record(state, "api", service.pid, holder.pid, spawned_at=time.time(), owner_lock=lock)
        assert reaped(state, grace=2.0) == []  # its run is alive: its lock says so
        assert service.poll() is None
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert reaped(state, grace=2.0) == [f"stopped leftover service api (pgid {service.pid}) from an earlier run"]
        assert service.wait(timeout=30) is not None
        assert list(state.iterdir()) == []  # the record and the dead run's lock
    finally:
        for proc in (holder, service):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        holder.stdout.close()


def test_a_pidfile_names_its_owners_lock_and_its_removal_lets_go(tmp_path: Path) -> None:
    write_pidfile(tmp_path / "a.json", "e1", "scorer", os.getpid(), os.getpgid(0), None)
    write_pidfile(tmp_path / "b.json", "e2", "scorer", os.getpid(), os.getpgid(0), None)
    fields = json.loads((tmp_path / "a.json").read_text())
    assert fields["owner_lock"] == json.loads((tmp_path / "b.json").read_text())["owner_lock"]
    assert abs(fields["spawned_at"] - time.time()) < 600
    remove_pidfile(tmp_path / "a.json")
    assert lock_state(tmp_path / fields["owner_lock"]) is Liveness.ALIVE
    remove_pidfile(tmp_path / "b.json")
    assert list(tmp_path.iterdir()) == []


@given(st.integers(min_value=0, max_value=10**8))
def test_ps_elapsed_times_parse_to_seconds(seconds: int) -> None:
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{days}-{hours:02}:{minutes:02}:{secs:02}" if days else
            f"{hours:02}:{minutes:02}:{secs:02}" if hours else f"{minutes:02}:{secs:02}")
    assert parse_etime(f"  {text}") == seconds


@given(st.text())
def test_any_ps_output_gives_rows_or_nothing(text: str) -> None:
    rows = parse_ps(text, 1e9)
    assert all(row.started <= 1e9 for row in rows.values())
    assert parse_etime(text) is None or parse_etime(text) >= 0


def test_ps_rows_are_read_as_ps_writes_them() -> None:
    rows = parse_ps("  101   101 Ss       01:02\n  102   101 Z+   1-00:00:03\nPID PGID STAT ELAPSED\n", 10_000.0)
    assert [(r.pid, r.pgid, r.live, r.started) for r in rows.values()] == [
        (101, 101, True, 10_000.0 - 62), (102, 101, False, 10_000.0 - 86_403)]


def test_a_dead_runs_lock_files_are_swept_a_live_ones_and_a_referenced_one_kept(tmp_path: Path) -> None:
    from evalrun.owners import sweep_owner_locks

    mine = hold_owner_lock(tmp_path, "x")
    dead = tmp_path / ".owner-1-0123456789abcdef.lock"
    dead.write_text("")
    half_made = tmp_path / "..owner-1-0123456789abcdef.lock.deadbeef.new"  # its maker killed before the rename
    half_made.write_text("")
    kept = tmp_path / ".owner-2-fedcba9876543210.lock"  # a record still names it
    kept.write_text("")
    other = tmp_path / "notes.lock"
    other.write_text("")
    sweep_owner_locks(tmp_path, keep={kept.name})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine, kept.name, other.name])
    let_go_owner_lock(tmp_path, "x")


SCRATCH_HOLDER = ("import sys, tempfile, time; tempfile.tempdir = sys.argv[1]\n"
                  "from evalrun.scratch import make_scratch\nprint(make_scratch(), flush=True); time.sleep(600)\n")


def test_without_proc_the_sweep_spares_a_live_runs_scratch_removes_a_dead_ones_and_an_unknown_ones_stays(
    tmp_path: Path, no_proc
) -> None:
    from evalrun.scratch import sweep_scratch

    live = subprocess.Popen([sys.executable, "-c", SCRATCH_HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    dead = subprocess.Popen([sys.executable, "-c", SCRATCH_HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        live_folder, dead_folder = Path(live.stdout.readline().strip()), Path(dead.stdout.readline().strip())
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        # An older evalrun's scratch (its marker never locked) whose owner's pid is taken: cannot tell.
        older = tmp_path / f"evalrun-{os.getpid()}-0-older"
        older.mkdir()
        (older / ".evalrun-scratch").write_text(f"{os.getpid()}\n")
        assert sweep_scratch(tmp_path) == [dead_folder]
        assert live_folder.is_dir() and older.is_dir()
    finally:
        for proc in (live, dead):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
