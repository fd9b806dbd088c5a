"""evals/lib/evalrun_forks.py: a run forked from the warm zygote is a fresh ``python -m evalrun``.

The own evals (gate-bites, manifest-errors) and ``Project.run`` run evalrun
through it, so it is held here to what a fresh process does: the same exit
code, stdout and stderr for the same invocation (a signal reads as ``-N``);
a run past its limit is stopped with its scorers; a run whose environment
changes how the interpreter starts runs fresh; a dead zygote is an error,
not a hang.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from evalrun_forks import Zygote, ZygoteDied
from harness import Project, an_eval, json_scorer, manifest


PASS = json_scorer([{"name": "ok", "passed": True, "assertions": 2}])
FAIL = json_scorer([{"name": "bad", "passed": False, "assertions": 1, "message": "no"}])
KILLS_EVALRUN = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
FILES = {
    "manifest.toml": manifest(an_eval("passes"), an_eval("fails"), an_eval("kills", tier="t2"),
                              an_eval("sleeps", tier="t3", timeout=3600)).text,
    "evals/passes/score.py": PASS,
    "evals/fails/score.py": FAIL,
    "evals/kills/score.py": KILLS_EVALRUN,
    "evals/sleeps/score.py": "import time\nopen('started', 'w').close()\ntime.sleep(3600)\n",
    "broken.toml": manifest(an_eval("x", [], dir=".")).text,
    "accents.toml": manifest(an_eval("café", dir="evals/passes")).text,
}
INVOCATIONS = [
    ("t1", "-j", "1", "--json", "out.json"),  # one at a time: the order of the lines is fixed
    ("dry",),
    ("t1", "--manifest", "broken.toml"),
    ("t1", "--no-such-option"),
    ("--version",),
    ("baseline", "--help"),
]
DURATION = re.compile(r"\d+(\.\d+)? ?(ms|s)\b")


def _env(**extra: str) -> dict[str, str]:
    return Project(Path(".")).env({"NO_COLOR": "1", **extra})


def _fresh(root: Path, args: tuple[str, ...], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    # the fresh process a fork is held to
    proc = subprocess.run([sys.executable, "-m", "evalrun", *args], cwd=root, env=env, capture_output=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _forked(zygote: Zygote, root: Path, args: tuple[str, ...], env: dict[str, str], limit_s: float = 120) -> tuple[int | None, bytes, bytes]:
    out, err = root.parent / f"{root.name}.out", root.parent / f"{root.name}.err"
    code = zygote.run(args, root, env, out, err, limit_s)
    return code, out.read_bytes(), err.read_bytes()


def _same_shape(text: bytes, root: Path) -> str:
    return DURATION.sub("<t>", text.decode("utf-8", errors="replace").replace(str(root), "<root>"))


@pytest.fixture
def zygote():
    with Zygote(_env()) as warm:
        yield warm


@pytest.mark.parametrize("args", INVOCATIONS, ids=" ".join)
def test_a_forked_run_says_and_exits_as_a_fresh_one(tmp_path: Path, zygote: Zygote, args: tuple[str, ...]) -> None:
    fresh_root, forked_root = tmp_path / "fresh" / "p", tmp_path / "forked" / "p"
    Project(fresh_root).write(FILES)
    Project(forked_root).write(FILES)
    env = _env()
    fresh = _fresh(fresh_root, args, env)
    forked = _forked(zygote, forked_root, args, env)
    assert forked[0] == fresh[0]
    assert _same_shape(forked[1], forked_root) == _same_shape(fresh[1], fresh_root)
    assert _same_shape(forked[2], forked_root) == _same_shape(fresh[2], fresh_root)
    assert fresh[1] or fresh[2]  # each invocation says something worth comparing


def test_a_run_killed_by_a_signal_reads_as_minus_the_signal_as_a_fresh_one(tmp_path: Path, zygote: Zygote) -> None:
    Project(tmp_path / "fresh").write(FILES)
    Project(tmp_path / "forked").write(FILES)
    fresh, forked = _fresh(tmp_path / "fresh", ("t2",), _env()), _forked(zygote, tmp_path / "forked", ("t2",), _env())
    assert forked[0] == fresh[0] == -signal.SIGKILL


def test_a_run_past_its_limit_is_stopped_with_its_scorer(tmp_path: Path, zygote: Zygote) -> None:
    # The scorer sleeps for an hour, so the limit always comes first. A short limit is tried first and
    # doubled until a run had started its scorer before the limit (1 s is ample on an idle machine;
    # a loaded one gets up to 16 s). The per-test leak check fails this test if the
    # scorer outlived its evalrun.
    Project(tmp_path / "p").write(FILES)
    started = tmp_path / "p" / "evals" / "sleeps" / "started"
    for limit_s in (1.0, 2.0, 4.0, 8.0, 16.0):
        code, _, _ = _forked(zygote, tmp_path / "p", ("t3",), _env(), limit_s=limit_s)
        assert code is None
        if started.exists():
            break
    assert started.exists()  # it had started the scorer


def test_a_run_that_would_start_the_interpreter_differently_runs_fresh(tmp_path: Path, zygote: Zygote) -> None:
    root = tmp_path / "p"
    Project(root).write(FILES)
    env = _env(PYTHONIOENCODING="latin-1")
    args = ("dry", "--manifest", "accents.toml")
    fresh = _fresh(root, args, env)
    forked = _forked(zygote, root, args, env)
    assert "café".encode("latin-1") in fresh[1]  # the setting took effect in the fresh run
    assert forked == fresh


def test_a_dead_zygote_is_an_error_not_a_hang(tmp_path: Path) -> None:
    Project(tmp_path / "p").write(FILES)
    warm = Zygote(_env())
    os.kill(warm.pid, signal.SIGKILL)
    with pytest.raises(ZygoteDied, match="ended with exit code -9"):
        _forked(warm, tmp_path / "p", ("dry",), _env())
    warm.close()
