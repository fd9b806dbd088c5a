"""The pidfile written for every running scorer and service: what the next run reads to stop what a killed one left."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.said import reaped
from evalrun.leftovers import remove_pidfile, write_pidfile
import evalrun.procfs
from evalrun.procfs import start_ticks


def test_a_pidfile_names_the_group_its_start_and_its_owner(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                             start_new_session=True)
    try:
        write_pidfile(tmp_path / "scorer.json", "e1", "scorer", child.pid, child.pid, None)
        fields = json.loads((tmp_path / "scorer.json").read_text())
        assert fields["version"] == 1 and (fields["name"], fields["kind"]) == ("e1", "scorer")
        assert (fields["pid"], fields["pgid"], fields["proc_start"]) == (child.pid, child.pid, start_ticks(child.pid))
        assert (fields["owner_pid"], fields["owner_start"]) == (os.getpid(), start_ticks(os.getpid()))
        assert fields["data_dir"] is None
        # no temporary file left; the owner's lock, held while the pidfile is there, tells the next run it lives
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fields["owner_lock"], "scorer.json"])
        assert reaped(tmp_path) == []  # its owner (this process) is alive: left alone
        assert child.poll() is None
        remove_pidfile(tmp_path / "scorer.json")
        assert list(tmp_path.iterdir()) == []  # the lock goes with the run's last pidfile
    finally:
        child.kill()
        child.wait()


def test_a_symlink_at_the_pidfile_is_replaced_never_written_through(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "scorer.json").symlink_to(precious)
    write_pidfile(tmp_path / "state" / "scorer.json", "e1", "scorer", os.getpid(), os.getpgid(0), None)
    assert precious.read_text() == "keep me"
    assert not (tmp_path / "state" / "scorer.json").is_symlink()
    assert json.loads((tmp_path / "state" / "scorer.json").read_text())["name"] == "e1"


def test_a_pidfile_gets_the_mode_open_gives_under_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_pidfile(tmp_path / "a.json", "e1", "scorer", os.getpid(), os.getpgid(0), None)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o640


def test_a_forked_child_names_itself_as_the_owner(tmp_path: Path) -> None:
    write_pidfile(tmp_path / "parent.json", "e0", "scorer", os.getpid(), os.getpgid(0), None)  # fills any cache
    pid = os.fork()
    if pid == 0:  # the isolated run is such a child: its pidfiles must name it, not the parent
        code = 0
        try:
            write_pidfile(tmp_path / "child.json", "e1", "scorer", os.getpid(), os.getpgid(0), None)
        except BaseException:  # noqa: BLE001 - the child must never return into pytest
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    fields = json.loads((tmp_path / "child.json").read_text())
    assert fields["owner_pid"] == pid != os.getpid()


def test_proc_stat_reads_a_live_process_whose_name_holds_spaces_and_parentheses() -> None:
    """``/proc/<pid>/stat`` read in one go: a comm such as ``a) (b c`` (the kernel keeps 15 bytes) does not shift
    the fields after it; state, group and start time are those ``ps`` shows."""
    import signal as _signal

    from evalrun.procfs import proc_stat

    code = (
        "import ctypes, sys, time\n"
        "ctypes.CDLL(None).prctl(15, b'a) (b c) x) 1 2 3', 0, 0, 0)\n"  # PR_SET_NAME
        "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        stat = proc_stat(child.pid)
        ps = subprocess.run(["ps", "-o", "stat=,pgid=,comm=", "-p", str(child.pid)], capture_output=True, text=True,
                            check=True).stdout.split(None, 2)
        assert stat is not None
        # state may move from R to S between the two reads (the child is on its way into sleep): both are live
        assert (stat.pid, stat.pgid) == (child.pid, int(ps[1])) and {stat.state, ps[0][0]} <= {"R", "S"}
        assert ps[2].strip() == "a) (b c) x) 1 2"
        with open(f"/proc/{child.pid}/stat", "rb") as fh:
            assert stat.start_ticks == int(fh.read().rsplit(b")", 1)[1].split()[19])
        assert stat.live
    finally:
        os.killpg(child.pid, _signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert proc_stat(child.pid) is None  # reaped: gone


@settings(max_examples=200, deadline=None)
@given(
    comm=st.binary(min_size=0, max_size=15).filter(lambda b: b"\0" not in b),
    state=st.sampled_from("RSDZXtTIW"),
    numbers=st.lists(st.integers(0, 2**63 - 1), min_size=49, max_size=49),
)
def test_parse_stat_reads_state_group_and_start_whatever_the_name_holds(comm, state, numbers) -> None:
    """Any name the kernel can hold (spaces, parentheses, newlines, any byte but NUL) leaves the fields after it
    in place: state, pgrp (the 3rd field after the name) and starttime (the 20th)."""
    from evalrun.procfs import parse_stat

    raw = b"42 (" + comm + b") " + state.encode() + b" " + b" ".join(str(n).encode() for n in numbers) + b"\n"
    stat = parse_stat(42, raw)
    assert stat is not None
    assert (stat.pid, stat.state, stat.pgid, stat.start_ticks) == (42, state, numbers[1], numbers[18])
    cut = b"42 (" + comm + b") " + state.encode() + b" " + b" ".join(str(n).encode() for n in numbers[:18])
    assert parse_stat(42, cut) is None  # a record cut before its start time is none, never a misread
    assert parse_stat(42, b"") is None


def test_a_scorers_start_time_comes_from_its_spawn_and_is_what_proc_says(tmp_path: Path, monkeypatch) -> None:
    # The spawn reads CLOCK_BOOTTIME either side of it: within one tick, that tick is the child's start time as
    # /proc/<pid>/stat gives it, and the pidfile is written without reading /proc; across a tick, /proc is read.
    import evalrun.leftovers
    import evalrun.process
    from evalrun.process import ProcessRequest, run_process

    if not evalrun.process._posix_spawn_works or evalrun.procfs.boot_clock_ns() is None:
        pytest.skip("os.posix_spawn and CLOCK_BOOTTIME are Linux's")
    seen: list[tuple[int, int | None, int | None]] = []

    def spawned(pid: int, start: int | None) -> None:
        seen.append((pid, start, start_ticks(pid)))
        write_pidfile(tmp_path / f"{len(seen)}.json", "e1", "scorer", pid, pid, None, start=start)

    script = "import sys; sys.stdin.read()"  # stdin is /dev/null: ends at once, after /proc was read above
    for _ in range(20):
        run_process(ProcessRequest(argv=("python", "-c", script), cwd=tmp_path, env=dict(os.environ), timeout=30),
                    on_spawned=spawned)
    told = [(start, proc) for _, start, proc in seen if start is not None]
    assert len(seen) == 20 and told  # a spawn takes well under a tick (10 ms): most are told
    assert all(start == proc for start, proc in told)
    records = [json.loads((tmp_path / f"{i}.json").read_text()) for i in range(1, 21)]
    assert [r["proc_start"] for r in records] == [proc for _, _, proc in seen]

    monkeypatch.setattr(evalrun.leftovers, "start_ticks", lambda pid: pytest.fail("read /proc for a known start"))
    write_pidfile(tmp_path / "known.json", "e1", "scorer", os.getpid(), os.getpgid(0), None, start=12345)
    assert json.loads((tmp_path / "known.json").read_text())["proc_start"] == 12345


@given(st.integers(0, 2**62), st.integers(0, 10**9))
def test_a_start_time_is_told_only_when_both_clock_readings_fall_in_one_tick(before: int, spread: int) -> None:
    from evalrun.procfs import _TICK_NS, start_ticks_between

    told = start_ticks_between(before, before + spread)
    if not _TICK_NS:
        assert told is None
    elif before // _TICK_NS == (before + spread) // _TICK_NS:
        assert told == before // _TICK_NS
    else:
        assert told is None
    assert start_ticks_between(None, before) is None and start_ticks_between(before, None) is None


def test_a_workers_slot_is_rewritten_in_place_blanked_between_scorers_and_made_again_if_removed(
    tmp_path: Path,
) -> None:
    from evalrun.leftovers import PidfileSlot

    slot_path = tmp_path / f"scorer.{os.getpid()}.7.json"
    slot = PidfileSlot(slot_path)
    children = [subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                                 start_new_session=True) for _ in range(3)]
    try:
        slot.write("a-rather-long-eval-name", children[0].pid)
        first = json.loads(slot_path.read_text())
        assert (first["name"], first["pid"], first["pgid"]) == ("a-rather-long-eval-name", children[0].pid, children[0].pid)
        assert first["proc_start"] == start_ticks(children[0].pid)
        inode = slot_path.stat().st_ino
        slot.blank()  # the scorer's group is gone: the record names nothing, and this live run's slot is left alone
        assert slot_path.read_bytes().strip() == b""
        assert reaped(tmp_path) == [] and slot_path.exists()
        slot.write("e2", children[1].pid, start=start_ticks(children[1].pid))  # shorter: padded with blanks
        second = json.loads(slot_path.read_text())
        assert (second["name"], second["pid"], second["owner_pid"]) == ("e2", children[1].pid, os.getpid())
        assert slot_path.stat().st_ino == inode  # written in place, no file made
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([second["owner_lock"], slot_path.name])
        slot_path.unlink()  # removed behind its back (another run's sweep, the user): the next record is whole again
        slot.write("e3", children[2].pid)
        assert json.loads(slot_path.read_text())["pid"] == children[2].pid
        slot.blank()
        slot.close()
        assert list(tmp_path.iterdir()) == []  # the slot and the owner lock go with the worker
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_a_slot_closed_while_its_scorer_may_still_run_keeps_its_record_and_lock(tmp_path: Path) -> None:
    """A second Ctrl-C leaves a worker supervising its scorer while the run ends: the record stays (and the lock,
    which this process's death lets go), so the next run stops that group instead of never hearing of it."""
    from evalrun.leftovers import PidfileSlot

    slot_path = tmp_path / f"scorer.{os.getpid()}.8.json"
    slot = PidfileSlot(slot_path)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                             start_new_session=True)
    try:
        slot.write("still-running", child.pid)
        slot.close()
        record = json.loads(slot_path.read_text())
        assert record["pid"] == child.pid and (tmp_path / record["owner_lock"]).exists()
    finally:
        child.kill()
        child.wait()
    slot.blank()  # what the worker does once the group is gone; then the slot goes as usual
    slot.close()
    assert list(tmp_path.iterdir()) == []


def test_a_dead_runs_blank_slot_is_removed_a_live_ones_kept(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid no process has now: a run that is gone
    (tmp_path / f"scorer.{gone.pid}.0.json").write_text(" " * 300)
    (tmp_path / f"scorer.{os.getpid()}.0.json").write_text(" " * 300)  # this live run's, between two scorers
    assert reaped(tmp_path) == []
    assert [p.name for p in tmp_path.iterdir()] == [f"scorer.{os.getpid()}.0.json"]
