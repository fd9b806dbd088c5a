"""Keys kept out of every channel of t1/t2, not only the scorer's environment.

Services, probes and manifest ``env`` obey the scorers' tier rule (no key in
t1/t2, ever), a manifest that tries is one line, and a service's start failure
never prints a key.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
from pathlib import Path

import pytest

from evalrun.errors import ManifestError
from evalrun.run.execute import Scratch, run_scorer, scorer_base_env
from evalrun.manifest import EvalSpec, load_manifest
from evalrun.models.scorer_env import T1_MODEL_URL, scrub_environment
from evalrun.plan import PlannedEval
from evalrun.secrets import PLACEHOLDER
from harness import an_eval, manifest
from harness.manifest_builder import EvalBlock

# Never a real key: random per test run, asserted absent from every output.
FAKE_KEY = "sk-test-" + secrets.token_hex(20)
ANT_KEY = "sk-ant-test-" + secrets.token_hex(20)
KEYS = {"OPENAI_API_KEY": FAKE_KEY, "ANTHROPIC_API_KEY": ANT_KEY}

DUMP = (
    "import json, os, sys\n"
    "names = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'FROM_MANIFEST']\n"
    "json.dump({n: os.environ.get(n) for n in names}, open(sys.argv[1], 'w'))\n"
)

SCORER = """
from evalrun import scorer
with scorer.check("ran") as c:
    c.true(True)
"""


def test_a_t2_service_gets_placeholder_keys_and_no_live_base_url(project) -> None:
    proj = project(manifest(
        an_eval("uses-app", tier="t2", dir="e", services=["app"], files={"score.py": SCORER}),
        services={"app": {"run": ["python", "app.py", "service-env.json"], "ready": "file:service-env.json",
                          "ready_timeout": 60}},
    ).project({"app.py": DUMP + "import time\nwhile True:\n    time.sleep(1)\n"}))
    r = proj.run("t2", env=KEYS)
    assert r.code in (0, 3), r.output  # passed; no baseline yet
    seen = json.loads((proj.root / "service-env.json").read_text())
    assert seen["OPENAI_API_KEY"] == PLACEHOLDER and seen["ANTHROPIC_API_KEY"] == PLACEHOLDER
    assert seen["OPENAI_BASE_URL"] == T1_MODEL_URL + "/v1"
    assert FAKE_KEY not in r.output and ANT_KEY not in r.output


@pytest.mark.parametrize("command", [("t1",), ("dry", "t1"), ("dry",)])
def test_a_t1_command_probe_sees_no_key(project, command: tuple[str, ...]) -> None:
    proj = project(manifest(
        an_eval("probed", dir="e", requires=["dump"], files={"score.py": SCORER}),
        probes={"dump": {"command": [sys.executable, "dump.py", "probe-env.json"]}},
    ).project({"dump.py": DUMP}))
    r = proj.run(*command, env=KEYS)
    assert r.code in (0, 3), r.output
    seen = json.loads((proj.root / "probe-env.json").read_text())
    assert seen["OPENAI_API_KEY"] == PLACEHOLDER and seen["ANTHROPIC_API_KEY"] == PLACEHOLDER
    assert seen["OPENAI_BASE_URL"] == T1_MODEL_URL + "/v1"


def test_a_t3_service_start_failure_never_prints_the_key(project) -> None:
    boot = "import os, sys; print('boot with ' + os.environ['OPENAI_API_KEY']); sys.exit(3)"
    proj = project(manifest(
        an_eval("live", tier="t3", dir="e", services=["app"], files={"score.py": SCORER}),
        services={"app": {"run": ["python", "-c", boot], "ready": "file:never-written"}},
    ).project())
    r = proj.run("t3", env=KEYS)
    assert r.code == 1, r.output
    assert "service app exited (exit 3) before becoming ready" in r.output
    assert "boot with [redacted by evalrun]" in r.output
    assert FAKE_KEY not in r.output
    assert FAKE_KEY not in (proj.root / ".evalrun" / "results" / "t3.json").read_text()


def _manifest(tmp_path: Path, body: str) -> Path:
    (tmp_path / "e").mkdir(exist_ok=True)
    path = tmp_path / "manifest.toml"
    path.write_text(body, encoding="utf-8")
    return path


def x_eval(tier: str, **keys) -> EvalBlock:
    return an_eval("x", ["true"], tier=tier, dir="e", **keys)


APP = {"app": {"run": ["true"], "env": {"K": "${ANTHROPIC_API_KEY}"}}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (manifest(x_eval("t1", env={"OPENAI_API_KEY": "sk-from-manifest"})).text,
         'evals[0] ("x").env.OPENAI_API_KEY: OPENAI_API_KEY is a model key variable; t1 gets no model key'),
        (manifest(x_eval("t2", env={"TOKEN": "${OPENAI_API_KEY}"})).text,
         'evals[0] ("x").env.TOKEN: refers to ${OPENAI_API_KEY}, a model key variable; t2 gets no model key'),
        (manifest(x_eval("t2", env={"TOKEN": "Bearer $GROQ_API_KEY"})).text,
         "refers to ${GROQ_API_KEY}, a model key variable"),
        (manifest(x_eval("t1", env={"ACME_KEY": "x"}), models={"key_vars": ["ACME_KEY"]}).text,
         "env.ACME_KEY: ACME_KEY is a model key variable"),
        (manifest(x_eval("t2", services=["app"]), services=APP).text,
         "services.app.env.K: refers to ${ANTHROPIC_API_KEY}, a model key variable; the service is used by x (t2)"),
    ],
)
def test_a_manifest_handing_a_key_to_t1_or_t2_is_one_line(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        load_manifest(_manifest(tmp_path, body))
    text = str(caught.value)
    assert message in text and "\n" not in text
    assert "sk-from-manifest" not in text


def test_t3_may_hand_a_key_to_its_evals_and_services(tmp_path: Path) -> None:
    body = manifest(x_eval("t3", services=["app"], env={"OPENAI_API_KEY": "${OPENAI_API_KEY}"}), services=APP).text
    loaded = load_manifest(_manifest(tmp_path, body))
    assert loaded.evals[0].env == {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}


def test_an_eval_env_cannot_override_the_placeholder(tmp_path: Path) -> None:
    # The manifest refuses this; the runner does not rely on it.
    (tmp_path / "e").mkdir()
    out = tmp_path / "seen.json"
    spec = EvalSpec(name="x", tier="t2", dir="e", run=[sys.executable, "-c", DUMP, str(out)],
                    env={"OPENAI_API_KEY": FAKE_KEY, "FROM_MANIFEST": "yes"})
    planned = PlannedEval(spec=spec, dir=tmp_path / "e")
    base = scorer_base_env(scrub_environment({"PATH": "/usr/bin:/bin", **KEYS}, "t2", None))
    run_scorer(planned, "t2", base, {"ANTHROPIC_API_KEY": ANT_KEY}, Scratch(tmp_path / "scratch"), 1.0,
               threading.Event())
    seen = json.loads(out.read_text())
    assert seen["OPENAI_API_KEY"] == PLACEHOLDER and seen["ANTHROPIC_API_KEY"] == PLACEHOLDER
    assert seen["FROM_MANIFEST"] == "yes"
