"""Re-record ``fixtures/`` of the agent eval against the scripted model, as ``evalrun t3 --record`` would.

Starts ``fake_model.py`` and evalrun's proxy in record mode on 127.0.0.1, runs
``score.py`` through the proxy with a t3 environment, and leaves the fixtures
in ``FIXTURES_DIR`` (default: ``fixtures/`` beside this file): once plainly,
then once per experiment of the repository's manifest that runs the t2 agent
eval, with that experiment's ``env``, into ``FIXTURES_DIR/@<experiment>/``
(where ``evalrun t2`` replays that column from)::

    python evals/agent/record_fixtures.py [FIXTURES_DIR]

The tests compare a fresh recording with the committed one, so run this after
changing the agent's tasks or the scripted model, and commit the result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import fake_model

from evalrun.models.scorer_env import scrub_environment
from evalrun.models.replay.proxy import ReplayProxy

HERE = Path(__file__).resolve().parent


def _manifest() -> dict:
    return tomllib.loads((HERE.parents[1] / "manifest.toml").read_text(encoding="utf-8"))


def judge_model() -> str:
    """The judge model the repository's manifest names: the one t2 replays."""
    return _manifest()["models"]["judge"]


def columns() -> dict[str, dict[str, str]]:
    """The env of each experiment that runs the t2 agent eval (selected by its ``tags`` or ``evals``)."""
    manifest = _manifest()
    agent = next(e for e in manifest["evals"] if e["tier"] == "t2" and e["dir"] == "evals/agent")
    chosen = {}
    for name, experiment in (manifest.get("experiments") or {}).items():
        wanted, tags = experiment.get("evals") or [], experiment.get("tags") or []
        if (not wanted and not tags) or agent["name"] in wanted or set(tags) & set(agent.get("tags") or []):
            chosen[name] = experiment.get("env") or {}
    return chosen


def record_all(fixtures: Path) -> int:
    """The plain recording, then one per experiment column; the first failure's status."""
    status = record(fixtures)
    for name, env in columns().items():
        status = status or record(fixtures / f"@{name}", env)
    return status


def record(fixtures: Path, column_env: dict[str, str] | None = None) -> int:
    """Record every model call of ``score.py`` into ``fixtures``; return the scorer's exit status."""
    model = fake_model.start()
    proxy = ReplayProxy("record", upstream=f"http://127.0.0.1:{model.server_address[1]}", key_env={})
    proxy.start()
    try:
        base = proxy.register_eval("agent", fixtures)
        with tempfile.TemporaryDirectory() as scratch:
            env = scrub_environment(os.environ, "t3", base)
            env["EVALRUN_REPORT"] = str(Path(scratch) / "report.json")
            env.update(column_env or {})
            env.update(EVALRUN_TIER="t3", EVALRUN_JUDGE_MODEL=judge_model())
            done = subprocess.run([sys.executable, "score.py"], cwd=HERE, env=env, timeout=120)
            checks = json.loads(Path(env["EVALRUN_REPORT"]).read_text())["checks"] if done.returncode == 0 else []
        report = proxy.eval_report("agent")
    finally:
        proxy.stop()
        model.shutdown()
    print(f"recorded {report.calls} calls ({report.total_tokens} tokens, {', '.join(report.models)}) into {fixtures}")
    for message in (*report.missing, *report.unplayed):
        print(f"  {message}")
    failed = [c["name"] for c in checks if not c["passed"]]
    for name in failed:
        print(f"  check failed while recording: {name}")
    return done.returncode or (1 if report.missing or failed or not checks else 0)


if __name__ == "__main__":
    sys.exit(record_all(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE / "fixtures"))
