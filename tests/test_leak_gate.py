"""The harness's leak gate: it sees the processes a test leaves behind, by descent and by the leak tag.

``harness.leaks`` reads only processes it has not seen before; these tests
hold it to what a full /proc scan would say: a child started with a made-up
environment (no tag) is found through the process tree, an orphan re-parented
away from this process through its tag, a zombie is not running, and what
was running before is not new. ``leftovers`` kills what it reports.
"""

from __future__ import annotations

import os
import subprocess
import sys

from harness import wait_until
from harness.leaks import leftovers, live_descendants

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
GRACE = 0.2  # the leaks here never go on their own: waiting the suite's grace would only cost time


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


def test_a_child_with_a_made_up_environment_is_found_through_the_tree_and_killed() -> None:
    before = live_descendants()
    child = subprocess.Popen(SLEEP, env={"PATH": os.environ.get("PATH", "")})  # no leak tag
    try:
        found = {pid for pid, _ in live_descendants() - before}
        assert found == {child.pid}
        described = leftovers(before, grace=GRACE)
        assert len(described) == 1 and described[0].startswith(f"{child.pid}: ") and "time.sleep(600)" in described[0]
        child.wait(timeout=60)
        assert live_descendants() - before == set()
    finally:
        child.kill()
        child.wait()


def test_an_orphan_is_found_by_its_tag_after_its_parent_is_gone() -> None:
    before = live_descendants()
    spawner = subprocess.run(
        [sys.executable, "-c", "import subprocess, sys; print(subprocess.Popen(sys.argv[1:], "
         "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)", *SLEEP],
        capture_output=True, text=True, check=True, timeout=60,
    )
    orphan = int(spawner.stdout)  # its parent has exited: no longer a descendant of this process
    try:
        assert {pid for pid, _ in live_descendants() - before} == {orphan}
        assert [line.split(":")[0] for line in leftovers(before, grace=GRACE)] == [str(orphan)]
        wait_until(lambda: not _alive(orphan), what="the orphan to be killed")
    finally:
        if _alive(orphan):
            os.kill(orphan, 9)


def test_a_zombie_is_not_running_and_what_ran_before_is_not_new() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    wait_until(lambda: not _alive(child.pid), what="the child to exit")  # a zombie until waited for
    try:
        assert child.pid not in {pid for pid, _ in live_descendants()}
    finally:
        child.wait()
    sleeper = subprocess.Popen(SLEEP)
    try:
        before = live_descendants()
        assert sleeper.pid in {pid for pid, _ in before}
        assert live_descendants() - before == set()  # seen again, the same process: nothing new
        assert leftovers(before, grace=GRACE) == []
    finally:
        sleeper.kill()
        sleeper.wait()
