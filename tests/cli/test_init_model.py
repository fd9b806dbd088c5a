"""``evalrun init --model``: day one of a project that calls a model through the official openai SDK.

The day one itself (t1 green, ``t3 --record`` against the fake upstream init
wrote, then ``t2`` green with that upstream stopped, the scorer the real openai
SDK) is the sample project the CI workflow runs: tests/cli/test_ci_workflow_run.py,
``test_init_model_records_with_t3_then_replays_green_in_t2_with_the_upstream_stopped``
and its pull-request t2 job. Here: what init refuses and what plain init leaves out.
"""

from __future__ import annotations

import importlib.util

import pytest

# Found, not imported: importing the SDK costs each xdist worker a second of CPU while it collects,
# and these tests only need the generated scorer (its own process) to find it.
if importlib.util.find_spec("openai") is None:
    pytest.skip("the dev extra installs the openai SDK the generated scorer uses", allow_module_level=True)

KEY = "sk-fake-init-model-123456"


def test_an_upstream_that_is_no_base_url_is_one_line_exit_2(project) -> None:
    proj = project()
    assert proj.run("init", "--model").code == 0
    path = proj.root / "manifest.toml"
    path.write_text(path.read_text().replace('# upstream = "http://127.0.0.1:8765/v1"', 'upstream = "127.0.0.1:8765/v1"'))
    r = proj.run("t1")
    assert r.code == 2 and r.err.strip().startswith("evalrun: error: manifest.toml: models.upstream: must be a base URL"), r.err
    path.write_text(path.read_text().replace('upstream = "127.0.0.1:8765/v1"', "# no upstream"))
    bad_env = proj.run("t3", "--record", env={"OPENAI_API_KEY": KEY, "EVALRUN_UPSTREAM": "localhost"})
    assert bad_env.code == 2 and "EVALRUN_UPSTREAM='localhost': must be a base URL" in bad_env.err, bad_env.output


def test_plain_init_writes_no_model_eval(project) -> None:
    proj = project()
    assert proj.run("init").code == 0
    assert not (proj.root / "evals/answer").exists() and not (proj.root / "evals/fake_upstream.py").exists()
    assert "[models]" not in (proj.root / "manifest.toml").read_text()
    assert proj.run("t1").code == 0
