"""Where a live or recording run's model calls would go, checked without running (``evalrun check``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import an_eval
from harness import manifest as build_manifest

from evalrun.manifest import load_manifest
from evalrun.run.model_calls import upstream_problems

ENDPOINT = {"OPENAI_BASE_URL": "http://gw:1/v1/chat/completions"}  # a full endpoint, where the SDKs want a base URL


def _manifest(tmp_path: Path, live_env: dict[str, str] | None = None) -> Path:
    """A t1 eval whose env names an endpoint (never called: t1 has no model) and a t3 eval with ``live_env``."""
    live = {"env": live_env} if live_env is not None else {}
    built = build_manifest(an_eval("offline", ["python", "s.py"], env=ENDPOINT),
                     an_eval("live", ["python", "s.py"], tier="t3", model=True, **live))
    path = tmp_path / "manifest.toml"
    path.write_text(built.text)
    for name in ("offline", "live"):
        (tmp_path / "evals" / name).mkdir(parents=True, exist_ok=True)
    return path


def test_a_t3_eval_whose_env_names_an_endpoint_is_one_line_naming_the_eval(tmp_path: Path) -> None:
    manifest = load_manifest(_manifest(tmp_path, ENDPOINT))
    [problem] = upstream_problems(manifest, {})
    assert problem.startswith('manifest.toml: evals[1] ("live")'), problem
    assert "is an endpoint, not a base URL" in problem and "\n" not in problem


def test_the_run_s_own_upstream_variables_are_checked_once(tmp_path: Path) -> None:
    manifest = load_manifest(_manifest(tmp_path))
    problems = upstream_problems(manifest, {"EVALRUN_UPSTREAM_OPENIA": "http://o:1"})
    assert len(problems) == 1 and "EVALRUN_UPSTREAM_OPENIA: no such provider" in problems[0], problems


def test_base_urls_and_evals_that_never_call_a_provider_pass(tmp_path: Path) -> None:
    # t1's endpoint is never called (t1 has no model); t2 replays; a base URL is what the SDKs want.
    manifest = load_manifest(_manifest(tmp_path, {"OPENAI_BASE_URL": "http://gw:1/v1"}))
    assert upstream_problems(manifest, {"ANTHROPIC_BASE_URL": "http://a:2"}) == []


def test_evalrun_check_refuses_the_manifest_s_endpoint_and_warns_of_the_machine_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalrun.cli

    path = _manifest(tmp_path, ENDPOINT)
    assert evalrun.cli.main(["check", "--manifest", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('evalrun: error: manifest.toml: evals[1] ("live")') and err.count("\n") == 1, err

    path = _manifest(tmp_path)
    monkeypatch.setenv("EVALRUN_UPSTREAM_OPENIA", "http://o:1")  # the session reads evalrun's environment
    assert evalrun.cli.main(["check", "--manifest", str(path)]) == 0
    out = capsys.readouterr()
    assert "warning: evalrun t3 here would refuse it: EVALRUN_UPSTREAM_OPENIA: no such provider" in out.out + out.err
    assert ": valid, 2 evals" in out.out
