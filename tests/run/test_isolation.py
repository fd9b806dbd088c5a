"""run_isolated as root: the calling thread enters the namespace, what it starts is inside, and it comes back.

A network namespace belongs to a thread (``/proc/thread-self/ns/net``); the threads
and processes a thread starts inherit its namespace. So as root evalrun moves the
thread that runs the collect stage in and out, and forks nothing. These tests look
at the namespace each party is in, by its inode, and at what each can reach.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from evalrun.run.isolation import run_isolated

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the in-thread namespace is the path taken as root; "
                                "as another user run_isolated forks (tests/cli/test_isolation.py covers it)")


def _ns() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


def _child_ns() -> int:
    out = subprocess.run([sys.executable, "-c", "import os; print(os.stat('/proc/self/ns/net').st_ino)"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


def _in_thread(work):
    box: list = []
    t = threading.Thread(target=lambda: box.append(work()))
    t.start()
    t.join(30)
    return box[0]


@pytest.fixture
def host_listener():
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def _reaches(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def test_what_the_body_starts_is_inside_and_the_thread_comes_back_to_the_host(host_listener):
    host = _ns()
    entered: list[str] = []
    parked = threading.Event()
    before = threading.Thread(target=parked.wait)  # started before: stays on the host, as evalrun's other threads
    before.start()

    def body():
        inside = _ns()
        return (inside, _in_thread(_ns), _in_thread(_child_ns), _child_ns(), _reaches(host_listener),
                _in_thread(lambda: _reaches(host_listener)), os.getpid())

    ok, seen, why = run_isolated(body, lambda: entered.append("entered"))
    parked.set()
    before.join()
    assert (ok, why, entered) == (True, None, ["entered"])
    inside, thread_ns, thread_child_ns, child_ns, reached, thread_reached, pid = seen
    assert pid == os.getpid()  # no fork: the run's state stays in evalrun, nothing is pickled across
    assert inside != host
    assert thread_ns == thread_child_ns == child_ns == inside  # everything the body starts shares its loopback
    assert not reached and not thread_reached  # the host's own 127.0.0.1 is not reachable from inside
    assert _ns() == host and _reaches(host_listener)  # the thread is back on the host network
    assert _in_thread(_ns) == host and _child_ns() == host


def test_a_body_that_raises_raises_here_and_the_thread_is_back_on_the_host():
    host = _ns()

    def body():
        raise ValueError("from inside")

    with pytest.raises(ValueError, match="from inside"):
        run_isolated(body, lambda: None)
    assert _ns() == host


def test_two_threads_isolated_at_once_each_have_a_namespace_of_their_own_and_both_come_back():
    """``evalrun bites -j N``: each bite's run isolates its own thread."""
    host = _ns()
    both = threading.Barrier(2, timeout=30)
    seen: dict[str, tuple] = {}

    def run(name: str) -> None:
        def body():
            inside = _ns()
            both.wait()  # both are inside at once
            return inside, _child_ns()

        ok, value, _ = run_isolated(body, lambda: None)
        seen[name] = (ok, value, _ns())

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    (ok_a, (ns_a, child_a), back_a), (ok_b, (ns_b, child_b), back_b) = seen["a"], seen["b"]
    assert ok_a and ok_b
    assert len({ns_a, ns_b, host}) == 3 and child_a == ns_a and child_b == ns_b
    assert back_a == back_b == host
