"""evalrun.process against real child processes: the stubs in tests/stubs/."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import STUBS, default_sigint, finishes, wait_until
from evalrun.process import ProcessOutcome, ProcessRequest, run_process, terminate_group

ENV = {"PATH": os.environ.get("PATH", os.defpath)}


def request(*args: str, **kwargs: object) -> ProcessRequest:
    """A request for ``python tests/stubs/<args[0]> <args[1:]>``."""
    defaults: dict[str, object] = {"cwd": STUBS, "env": ENV, "timeout": 20.0}
    defaults.update(kwargs)
    argv = (sys.executable, str(STUBS / args[0]), *args[1:])
    return ProcessRequest(argv=argv, **defaults)  # type: ignore[arg-type]


def pid_gone(pid: int) -> bool:
    """True when ``pid`` does not exist or is a zombie (this VM's init may never reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state in (b"Z", b"X")


def wait_gone(pid: int, within: float = 10.0) -> bool:
    # SIGKILL is delivered at once but the teardown is asynchronous.
    end = time.monotonic() + within
    while not pid_gone(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def read_pid(path: Path) -> int:
    return int(path.read_text())


@pytest.fixture
def kill_strays():
    """Collect grandchild pids; SIGKILL any left when the test ends, pass or fail."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


# --- exit codes and output -------------------------------------------------


@pytest.mark.parametrize(("arg", "code"), [("0", 0), ("1", 1), ("3", 3), ("sig:9", -9)])
def test_exit_code_is_recorded(arg: str, code: int) -> None:
    outcome = run_process(request("exit_with.py", arg))
    assert outcome.exit_code == code
    assert not (outcome.timed_out or outcome.cancelled or outcome.start_error)
    assert outcome.stdout_tail == b"to stdout\n"
    assert outcome.stderr_tail == b"to stderr\n"
    assert outcome.text_tail() == "to stdout\nto stderr\n"
    assert outcome.pid is not None and pid_gone(outcome.pid)


def test_a_child_exit_is_noticed_without_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every interval the supervisor could sleep for is an hour: only the
    # child's exit itself (pidfd, pipes closing) can wake it, so no run of
    # `true` waits out a poll before it is noticed.
    import evalrun.process

    for interval in ("CANCEL_POLL_S", "GROUP_POLL_S", "DRAIN_WINDOW_S"):
        monkeypatch.setattr(evalrun.process, interval, 3600.0)
    cancel = threading.Event()
    req = ProcessRequest(argv=("true",), cwd=STUBS, env=ENV, timeout=3600)
    outcomes = finishes(lambda: [run_process(req, cancel) for _ in range(20)])
    assert all(o.exit_code == 0 and not (o.timed_out or o.cancelled) for o in outcomes)


def test_no_file_descriptors_leak(tmp_path: Path) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    run_process(request("exit_with.py", "0"))  # warm up lazy imports
    before = open_fds()
    for _ in range(5):
        run_process(request("exit_with.py", "1", stdout_path=tmp_path / "out"))
        run_process(request("exit_cleanly_on_term.py", timeout=0.2, grace=1))
        run_process(ProcessRequest(argv=("./missing",), cwd=tmp_path, env=ENV, timeout=1))
    assert open_fds() == before


# --- lookup --------------------------------------------------------------


def _write(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("argv0", "message"),
    [
        ("evalrun-no-such-program-xyz", "program not found: evalrun-no-such-program-xyz"),
        ("./missing.sh", "program not found: ./missing.sh"),
        ("./score.sh", "program not executable: ./score.sh"),
        ("score.sh", "program not executable: score.sh"),  # found on PATH, mode 644
        ("./subdir", "program not executable: ./subdir"),
    ],
)
def test_program_that_cannot_start_is_an_outcome(tmp_path: Path, argv0: str, message: str) -> None:
    _write(tmp_path / "score.sh", "#!/bin/sh\necho hi\n", 0o644)
    (tmp_path / "subdir").mkdir()
    env = {"PATH": f"{tmp_path}:{ENV['PATH']}"}
    outcome = run_process(ProcessRequest(argv=(argv0,), cwd=tmp_path, env=env, timeout=5))
    assert outcome.start_error == message
    assert outcome.exit_code is None
    assert not outcome.timed_out and not outcome.cancelled


def test_relative_program_resolves_against_cwd_not_ours(tmp_path: Path) -> None:
    _write(tmp_path / "score.sh", "#!/bin/sh\necho \"scored $1\"\n", 0o755)
    outcome = run_process(ProcessRequest(argv=("./score.sh", "x"), cwd=tmp_path, env=ENV, timeout=5))
    assert (outcome.exit_code, outcome.stdout_tail) == (0, b"scored x\n")
    # A relative PATH entry is relative to the child's cwd too, as execvp sees it.
    outcome = run_process(ProcessRequest(argv=("score.sh",), cwd=tmp_path, env={"PATH": "."}, timeout=5))
    assert (outcome.exit_code, outcome.stdout_tail) == (0, b"scored \n")


def test_oserror_from_starting_is_an_outcome(tmp_path: Path, start_path: str) -> None:
    # Executable but no shebang and not a binary: execve fails with ENOEXEC.
    (tmp_path / "garbage").write_bytes(b"\x00\x01\x02 not a program")
    (tmp_path / "garbage").chmod(0o755)
    outcome = run_process(ProcessRequest(argv=("./garbage",), cwd=tmp_path, env=ENV, timeout=5))
    assert outcome.start_error is not None and outcome.start_error.startswith("could not start ./garbage: ")
    assert outcome.exit_code is None


def test_missing_cwd_is_an_outcome(tmp_path: Path) -> None:
    outcome = run_process(request("exit_with.py", "0", cwd=tmp_path / "nope"))
    assert outcome.start_error == f"working directory not found: {tmp_path / 'nope'}"


@pytest.mark.parametrize(
    "bad",
    [{"argv": ()}, {"timeout": 0}, {"grace": -1}, {"tail_bytes": 0}],
)
def test_invalid_request_is_a_programming_error(bad: dict[str, object]) -> None:
    fields: dict[str, object] = {"argv": ("true",), "cwd": STUBS, "env": ENV, "timeout": 1}
    with pytest.raises(ValueError):
        ProcessRequest(**{**fields, **bad})  # type: ignore[arg-type]


# --- deadline, cancel and the process group ---------------------------------


def test_timeout_kills_the_group_including_a_term_ignoring_grandchild(
    tmp_path: Path, kill_strays: list[int]
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    outcome = run_process(request("hang_with_grandchild.py", str(pid_file), timeout=1.0, grace=0.3))
    elapsed = time.monotonic() - started
    grandchild = read_pid(pid_file)
    kill_strays.append(grandchild)
    assert outcome.timed_out and not outcome.cancelled
    assert outcome.exit_code == -15  # the child itself dies of the TERM
    assert outcome.stdout_tail == b"hanging\n"
    assert wait_gone(grandchild), "grandchild survived the timeout"
    assert elapsed >= 1.0  # not before its deadline


def test_timeout_keeps_output_written_during_grace_and_ends_early() -> None:
    # The group is gone as soon as the child exits on TERM: no waiting out the hour of grace.
    outcome = finishes(lambda: run_process(request("exit_cleanly_on_term.py", timeout=0.5, grace=3600.0)))
    assert outcome.timed_out and outcome.exit_code == 3  # its own exit on TERM, not a KILL
    assert outcome.stdout_tail == b"ready\ngot TERM, cleaning up\n"


def test_cancel_from_another_thread_stops_the_group(tmp_path: Path, kill_strays: list[int]) -> None:
    pid_file = tmp_path / "grandchild.pid"
    cancel = threading.Event()
    # Cancel once the child and its grandchild are running, however long that takes here.
    threading.Thread(target=lambda: (wait_until(pid_file.exists, what="the grandchild's pid file"), cancel.set()),
                     daemon=True).start()
    outcome = finishes(
        lambda: run_process(request("hang_with_grandchild.py", str(pid_file), timeout=3600, grace=0.3), cancel)
    )
    grandchild = read_pid(pid_file)
    kill_strays.append(grandchild)
    assert outcome.cancelled and not outcome.timed_out  # stopped by the cancel, not the hour's deadline
    assert outcome.exit_code == -15
    assert wait_gone(grandchild)


def test_cancel_set_before_start_runs_nothing() -> None:
    cancel = threading.Event()
    cancel.set()
    outcome = run_process(request("exit_with.py", "0"), cancel)
    assert outcome.cancelled and outcome.exit_code is None and outcome.pid is None


@pytest.mark.parametrize("grandchild_mode", ["default", "ignore-term", "setsid", "setsid-ignore-term"])
def test_child_exits_while_grandchild_holds_the_pipes(
    tmp_path: Path, kill_strays: list[int], grandchild_mode: str
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    outcome = finishes(
        lambda: run_process(request("exit_leaving_grandchild.py", str(pid_file), grandchild_mode, timeout=3600, grace=0.3))
    )
    grandchild = read_pid(pid_file)
    kill_strays.append(grandchild)
    assert outcome.exit_code == 0
    assert not outcome.timed_out and not outcome.cancelled  # drain window + grace, not the hour's deadline
    assert outcome.stdout_tail == b"child done\n"
    assert wait_gone(grandchild), "grandchild outlived the eval"
    # One that left the group still held the scorer's pipes: found by them, stopped, and named.
    escaped = [f"pid {grandchild} ("] if grandchild_mode.startswith("setsid") else []
    assert [e[: len(f"pid {grandchild} (")] for e in outcome.escaped] == escaped


def test_the_platform_selector_supervises_as_epoll_does(
    tmp_path: Path, kill_strays: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Linux waits with epoll itself; macOS with its selector (kqueue): the same outcomes either way.
    import evalrun.process

    monkeypatch.setattr(evalrun.process, "_USE_EPOLL", False)
    outcome = run_process(request("exit_with.py", "3"))
    assert (outcome.exit_code, outcome.stdout_tail, outcome.stderr_tail) == (3, b"to stdout\n", b"to stderr\n")
    stopped = finishes(lambda: run_process(request("exit_cleanly_on_term.py", timeout=0.5, grace=3600.0)))
    assert stopped.timed_out and stopped.stdout_tail == b"ready\ngot TERM, cleaning up\n"
    pid_file = tmp_path / "grandchild.pid"
    held = finishes(lambda: run_process(request("exit_leaving_grandchild.py", str(pid_file), "setsid", timeout=3600,
                                                grace=0.3)))
    grandchild = read_pid(pid_file)
    kill_strays.append(grandchild)
    assert held.exit_code == 0 and held.stdout_tail == b"child done\n" and wait_gone(grandchild)
    assert [e[: len(f"pid {grandchild} (")] for e in held.escaped] == [f"pid {grandchild} ("]


def test_terminate_group_term_then_kill(tmp_path: Path, kill_strays: list[int]) -> None:
    pid_file = tmp_path / "grandchild.pid"
    proc = subprocess.Popen(
        [sys.executable, str(STUBS / "hang_with_grandchild.py"), str(pid_file)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
    )
    wait_until(pid_file.exists, what="the grandchild's pid file")
    grandchild = read_pid(pid_file)
    kill_strays.append(grandchild)
    assert terminate_group(proc.pid, grace=0.3, leader=proc) is True  # the grandchild ignores TERM
    assert proc.poll() == -15
    assert wait_gone(grandchild)
    assert terminate_group(proc.pid, grace=0.3) is False  # an empty group is fine


def test_terminate_group_can_ask_only_the_leader() -> None:
    proc = subprocess.Popen(["sleep", "3600"], start_new_session=True, preexec_fn=default_sigint)
    # It obeyed: terminate_group returns without waiting out the hour of grace.
    assert finishes(lambda: terminate_group(proc.pid, grace=3600.0, leader=proc, leader_signal=signal.SIGINT)) is False
    assert proc.poll() == -signal.SIGINT  # asked with SIGINT, not TERMed, not KILLed


# --- streams -------------------------------------------------------------


def test_stderr_flood_before_stdout_does_not_deadlock() -> None:
    size = 8 * 1024 * 1024
    outcome = run_process(request("flood_stderr.py", str(size), timeout=10, tail_bytes=1024))
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert outcome.stdout_tail == b"STDOUT-END\n"
    assert outcome.stderr_bytes == size + len(b"STDERR-END\n")
    assert outcome.stderr_tail == b"e" * (1024 - 11) + b"STDERR-END\n"


def test_one_gib_of_stdout_keeps_memory_bounded() -> None:
    # The driver runs in its own interpreter and reports its own VmHWM (its peak alone).
    size = 1 << 30
    driver = subprocess.run(
        [sys.executable, str(STUBS / "measure_peak_rss.py"), str(size)],
        capture_output=True,
        timeout=60,
        check=True,
    )
    report = json.loads(driver.stdout)
    assert report["exit_code"] == 0
    assert report["stdout_bytes"] == size + len(b"STDOUT-END\n")
    assert report["tail_len"] == 64 * 1024 and report["tail_end"] == "STDOUT-END\n"
    assert report["maxrss_kib"] < 200 * 1024, f"peak RSS {report['maxrss_kib']} KiB"


def test_stdout_path_receives_every_byte(tmp_path: Path) -> None:
    size = 5 * 1024 * 1024 + 123
    out = tmp_path / "stdout.txt"
    outcome = run_process(request("flood_stdout.py", str(size), stdout_path=out, tail_bytes=4096))
    data = out.read_bytes()
    assert len(data) == outcome.stdout_bytes == size + 11
    assert data[:size] == (bytes(range(256)) * (size // 256 + 1))[:size]
    assert outcome.stdout_tail == data[-4096:]
    assert outcome.stdout_path_error is None


def test_non_utf8_output_is_shown_escaped() -> None:
    outcome = run_process(request("write_non_utf8.py"))
    assert outcome.stdout_tail == b"out \xff\xfe end\n"
    assert outcome.text_tail() == "out \\xff\\xfe end\nerr \\xc3( end\n"


def test_text_tail_says_what_was_dropped() -> None:
    outcome = ProcessOutcome(
        argv=("x",), exit_code=0, timed_out=False, cancelled=False, start_error=None, duration_s=0.0,
        stdout_tail="é tail".encode()[1:], stderr_tail=b"", stdout_bytes=100, stderr_bytes=0,
    )  # fmt: skip
    # The cut split "é"; its leftover continuation byte is skipped, not shown.
    assert outcome.text_tail() == "[... 95 earlier bytes of stdout not kept ...]\n tail\n"


# --- shell, cwd, env ---------------------------------------------------------


def test_shell_runs_through_bin_sh(tmp_path: Path) -> None:
    env = {**ENV, "WHO": "world"}

    def shell(*argv: str) -> ProcessOutcome:
        return run_process(ProcessRequest(argv=argv, cwd=tmp_path, env=env, timeout=5, shell=True))

    one = shell("echo hello $WHO | tr a-z A-Z")
    assert (one.exit_code, one.stdout_tail) == (0, b"HELLO WORLD\n")
    # Several elements are joined with spaces, unquoted: `&&` keeps its meaning.
    assert shell("echo", "a", "&&", "echo", "b").stdout_tail == b"a\nb\n"
    missing = shell("no-such-cmd-xyz")
    assert missing.exit_code == 127 and missing.start_error is None


@pytest.fixture(params=["posix_spawn", "popen"])
def start_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test both ways a child can start: os.posix_spawn (Linux), Popen (elsewhere, or where refused)."""
    import evalrun.process

    if request.param == "popen":
        monkeypatch.setattr(evalrun.process, "_posix_spawn_works", False)
    elif not evalrun.process._posix_spawn_works:
        pytest.skip("os.posix_spawn is not used here")
    return str(request.param)


def in_thread(call):  # type: ignore[no-untyped-def]
    """``call()`` in a thread of its own, as the run's workers start scorers."""
    box = []
    worker = threading.Thread(target=lambda: box.append(call()))
    worker.start()
    worker.join()
    return box[0]


def test_a_child_gets_its_three_descriptors_and_no_other(tmp_path: Path, start_path: str) -> None:
    # As Popen's close_fds: a descriptor of ours that is inheritable (one evalrun was started with) stays ours.
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        code = "import os; print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"
        for run in (lambda c: c(), in_thread):
            outcome = run(lambda: run_process(ProcessRequest(argv=("python", "-c", code), cwd=tmp_path, env=ENV,
                                                             timeout=20)))
            assert outcome.stdout_tail == b"[0, 1, 2, 3]\n"  # 3: the listing's own descriptor
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_child_starts_with_the_signals_evalrun_ignores_back_to_default(tmp_path: Path, start_path: str) -> None:
    # Python ignores SIGPIPE and SIGXFSZ; a child of evalrun must not inherit that (Popen's restore_signals).
    outcome = run_process(ProcessRequest(argv=("cat", "/proc/self/status"), cwd=tmp_path, env=ENV, timeout=20))
    ignored = int(next(line for line in outcome.stdout_tail.decode().splitlines() if line.startswith("SigIgn:"))
                  .split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1))


def test_a_child_runs_in_its_folder_and_no_other_thread_moves(tmp_path: Path, start_path: str) -> None:
    here = os.getcwd()
    env = {"PATH": ENV["PATH"], "EVALRUN_EVAL": "rls-isolation"}

    def start() -> tuple[ProcessOutcome, str, str]:
        outcome = run_process(request("print_cwd_env.py", cwd=tmp_path, env=env))
        back = os.getcwd()  # where the starting thread is once the child runs
        if start_path == "posix_spawn":  # it changed folders in a working directory of its own: others stay
            os.chdir(tmp_path)
        return outcome, back, os.getcwd()

    outcome, back, moved = in_thread(start)
    assert Path(json.loads(outcome.stdout_tail)["cwd"]).resolve() == tmp_path.resolve()
    assert back == here and os.getcwd() == here
    assert moved == (str(tmp_path) if start_path == "posix_spawn" else here)
    missing = in_thread(lambda: run_process(ProcessRequest(argv=("./nope",), cwd=tmp_path, env=ENV, timeout=5)))
    assert missing.start_error == "program not found: ./nope"


def test_a_variable_with_an_empty_name_does_not_stop_the_start(tmp_path: Path) -> None:
    # posix_spawn refuses it where Popen passes it on: the child starts either way, as it did.
    outcome = run_process(ProcessRequest(argv=("sh", "-c", "echo started"), cwd=tmp_path, env={**ENV, "": "x"},
                                         timeout=20))
    assert (outcome.exit_code, outcome.stdout_tail, outcome.start_error) == (0, b"started\n", None)


def test_a_variable_the_system_cannot_pass_fails_that_start_alone_and_leaks_no_descriptor(tmp_path: Path) -> None:
    # A NUL in a value (a TOML "\u0000" escape): both starts refuse it; the eval is not started, named, and the
    # pipes made for it are closed.
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        outcome = run_process(ProcessRequest(argv=("sh", "-c", "echo started"), cwd=tmp_path,
                                             env={**ENV, "BAD": "a\0b"}, timeout=20, stdout_path=tmp_path / "out"))
        assert outcome.exit_code is None and "could not start sh: " in (outcome.start_error or ""), outcome
    assert len(os.listdir("/proc/self/fd")) == before


def test_cwd_and_env_are_honoured(tmp_path: Path, start_path: str) -> None:
    env = {"PATH": ENV["PATH"], "EVALRUN_EVAL": "rls-isolation"}
    outcome = run_process(request("print_cwd_env.py", cwd=tmp_path, env=env))
    seen = json.loads(outcome.stdout_tail)
    assert Path(seen["cwd"]).resolve() == tmp_path.resolve()
    assert seen["env"]["EVALRUN_EVAL"] == "rls-isolation"
    assert "HOME" not in seen["env"]  # the env is complete, nothing inherited
