"""Where a live or recording run's model calls would go, checked without running (``evalrun check``)."""

from __future__ import annotations

from pathlib import Path

from evalrun.manifest import load_manifest
from evalrun.run.model_calls import upstream_problems

MANIFEST = """
[[evals]]
name = "offline"
tier = "t1"
dir = "evals/offline"
run = ["python", "s.py"]
env = {{ OPENAI_BASE_URL = "http://gw:1/v1/chat/completions" }}

[[evals]]
name = "live"
tier = "t3"
dir = "evals/live"
run = ["python", "s.py"]
model = true
{env}
"""


def _manifest(tmp_path: Path, env: str = "") -> Path:
    path = tmp_path / "manifest.toml"
    path.write_text(MANIFEST.format(env=env))
    for name in ("offline", "live"):
        (tmp_path / "evals" / name).mkdir(parents=True)
    return path


def test_a_t3_eval_whose_env_names_an_endpoint_is_one_line_naming_the_eval(tmp_path: Path) -> None:
    manifest = load_manifest(_manifest(tmp_path, 'env = { OPENAI_BASE_URL = "http://gw:1/v1/chat/completions" }'))
    [problem] = upstream_problems(manifest, {})
    assert problem.startswith('manifest.toml: evals[1] ("live")'), problem
    assert "is an endpoint, not a base URL" in problem and "\n" not in problem


def test_the_run_s_own_upstream_variables_are_checked_once(tmp_path: Path) -> None:
    manifest = load_manifest(_manifest(tmp_path))
    problems = upstream_problems(manifest, {"EVALRUN_UPSTREAM_OPENIA": "http://o:1"})
    assert len(problems) == 1 and "EVALRUN_UPSTREAM_OPENIA: no such provider" in problems[0], problems


def test_base_urls_and_evals_that_never_call_a_provider_pass(tmp_path: Path) -> None:
    # t1's endpoint is never called (t1 has no model); t2 replays; a base URL is what the SDKs want.
    manifest = load_manifest(_manifest(tmp_path, 'env = { OPENAI_BASE_URL = "http://gw:1/v1" }'))
    assert upstream_problems(manifest, {"ANTHROPIC_BASE_URL": "http://a:2"}) == []
