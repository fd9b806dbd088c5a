"""A new user's first day (issue 34): no mistake passes quietly, no message points the wrong way.

Each test runs evalrun as the user did: a temporary project, the real openai SDK
against a local fake server where a model is involved.
"""

from __future__ import annotations

import importlib.util

import pytest

from harness import an_eval, eval_entry, json_scorer, manifest, replayed_pair
from harness.fakes_upstream import FakeUpstream

needs_openai = pytest.mark.skipif(importlib.util.find_spec("openai") is None,
                                  reason="the dev extra installs the openai SDK the scorer uses")

# The user's scorer: the official openai SDK, reading OPENAI_BASE_URL as every app does.
OPENAI_SCORER = """
from openai import OpenAI
from evalrun import scorer

client = OpenAI(max_retries=0, timeout=10)
answer = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "What is 2+2?"}]).choices[0].message.content
with scorer.check("the model answered") as c:
    c.true(bool(answer), answer)
"""


@needs_openai
def test_forgetting_model_true_is_said_when_recording_and_when_replaying(project) -> None:
    # The user forgot `model = true` on both evals; their own OPENAI_BASE_URL points at a local server.
    answer = an_eval("answer", tier="t2", files={"score.py": OPENAI_SCORER})
    proj = project(manifest(answer, an_eval("answer-live", tier="t3", dir="evals/answer", fixtures_for="answer")).project())
    env = {"OPENAI_API_KEY": "sk-fake-first-day-0123456789"}
    # fixtures_for without model = true could record nothing: every command refuses it, naming the fix.
    refused = proj.run("t3", "--record", env=env)
    assert refused.code == 2 and "add model = true" in refused.err, refused.output

    # Without fixtures_for the record run passes but records nothing: the run says which eval and why, once.
    (proj.root / "manifest.toml").write_text(manifest(answer, an_eval("answer-live", tier="t3", dir="evals/answer")).text)
    with FakeUpstream() as fake:
        recorded = proj.run("t3", "--record", env={**env, "OPENAI_BASE_URL": f"{fake.url}/v1"})
        assert fake.requests, "the scorer called the user's server directly"
    assert recorded.code == 0, recorded.output
    assert not (proj.root / "evals/answer/fixtures").exists()
    lines = [line for line in recorded.output.splitlines() if "recorded nothing" in line]
    assert len(lines) == 1, recorded.output
    assert "answer-live" in lines[0] and "model = true" in lines[0], lines[0]

    # t2 then fails on a connection: model = true is named first, network = "host" only for host services.
    replayed = proj.run("t2")
    assert replayed.code == 1, replayed.output
    message = proj.eval_result("answer", "t2")["message"]
    assert "model = true" in message, message
    if 'network = "host"' in message:
        assert message.index("model = true") < message.index('network = "host"'), message
        assert "service" in message[message.index("model = true"):], message
    assert 'a t3 eval with fixtures_for = "answer" and model = true writes with `evalrun t3 --record' in message, message


# The prompt from $PROMPT; with CATCH=1 the code under test swallows the error and a check fails with its text.
PROMPT_SCORER = """
import os
from openai import OpenAI
from evalrun import scorer

client = OpenAI(max_retries=0, timeout=10)
with scorer.check("the model answered") as c:
    try:
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=[
            {"role": "user", "content": os.environ.get("PROMPT", "What is 2+2?")}]).choices[0].message.content
    except Exception as exc:
        if os.environ.get("CATCH") != "1":
            raise
        answer = f"call failed: {exc}"
    c.true(not answer.startswith("call failed"), answer)
"""

MODEL_PAIR = manifest(*replayed_pair("answer")).text


@needs_openai
def test_a_replay_mismatch_names_the_eval_to_re_record_once(project) -> None:
    proj = project({"manifest.toml": MODEL_PAIR, "evals/answer/score.py": PROMPT_SCORER})
    with FakeUpstream() as fake:
        recorded = proj.run("t3", "--record", env={"OPENAI_API_KEY": "sk-fake-first-day-0123456789",
                                                    "EVALRUN_UPSTREAM": f"{fake.url}/v1"})
    assert recorded.code == 0 and "recorded nothing" not in recorded.output, recorded.output
    edited = proj.run("t2", env={"PROMPT": "What is 3+3?"})
    assert edited.code == 1, edited.output
    assert edited.output.count("evalrun t3 --record -e answer-live") == 1, edited.output
    assert edited.output.count("does not match its recording") == 1, edited.output  # once, not in "not compared"
    assert "evalrun t3 --record`" not in edited.output, edited.output
    caught = proj.run("t2", env={"PROMPT": "What is 3+3?", "CATCH": "1"})  # the check quotes the proxy's text
    assert caught.code == 1, caught.output
    assert caught.output.count("does not match its recording") == 1, caught.output
    assert caught.output.count("evalrun t3 --record -e answer-live") == 1, caught.output


def test_check_and_dry_say_a_program_the_run_would_not_find(project) -> None:
    proj = project({
        "manifest.toml": eval_entry("typo", run='["pyhton", "score.py"]')
        + eval_entry("gone", run='["./score.sh"]')
        + eval_entry("fine", extra='env = { PATH = "bin" }', run='["tool"]'),
        "evals/fine/bin/tool": "#!/bin/sh\nexit 0\n",
        "evals/typo/score.py": "", "evals/gone/README": "",
    })
    (proj.root / "evals/fine/bin/tool").chmod(0o755)
    checked = proj.run("check")
    assert checked.code == 0, checked.output
    assert ('manifest.toml: evals[0] ("typo").run[0]: program not found: pyhton (run[0] is looked up on the PATH '
            "its scorer gets") in checked.out, checked.out
    assert ('manifest.toml: evals[1] ("gone").run[0]: program not found: ./score.sh (run[0] is a file relative to '
            "evals/gone") in checked.out, checked.out
    assert '"fine"' not in checked.out  # found on the PATH its env gives it, relative to its folder, as the run would
    assert "2 programs not found here" in checked.out, checked.out
    dry = proj.run("dry")
    assert dry.code == 0, dry.output
    assert "typo: would run, and FAIL: program not found: pyhton" in dry.out, dry.out
    assert "gone: would run, and FAIL: program not found: ./score.sh" in dry.out, dry.out
    assert "fine: would run\n" in dry.out, dry.out


def _two_checks(names: list[str]) -> str:
    return json_scorer([{"name": n, "assertions": 1, "passed": True} for n in names])


def test_a_deleted_check_names_the_command_that_accepts_it_and_the_counts_read_in_english(project) -> None:
    proj = project({"manifest.toml": eval_entry("only") + eval_entry("other"),
                    "evals/only/score.py": _two_checks(["kept", "dropped"]),
                    "evals/other/score.py": _two_checks(["one"])})
    first = proj.run("baseline", "--update", "t1", "-e", "other")
    assert first.code == 0 and "(1 eval, 1 check)" in first.out, first.out  # not "1 evals, 1 checks"
    assert proj.run("baseline", "--update", "t1").code == 0
    (proj.root / "evals/only/score.py").write_text(_two_checks(["kept"]))
    r = proj.run("t1")
    assert r.code == 3, r.output
    accept = "accept it with: evalrun baseline --update t1 -e only"
    assert accept + "\n" in r.out, r.out
    assert proj.run(*accept.split(": ", 1)[1].split()[1:]).code == 0  # the command it names takes it
    assert proj.run("t1").code == 0


def test_baseline_update_without_a_tier_says_what_it_wants(project) -> None:
    proj = project({"manifest.toml": eval_entry("only"), "evals/only/score.py": _two_checks(["c"])})
    for args in (("baseline", "--update"), ("baseline",), ("baseline", "-e", "only")):
        r = proj.run(*args)
        assert r.code == 2, (args, r.output)
        assert r.err.strip().splitlines() == [
            "evalrun: error: baseline: name the tier to record: evalrun baseline --update t1 (t1, t2 or t3), "
            "--update --all for every tier, or evalrun baseline diff TIER to compare without running"], (args, r.err)
    assert not (proj.root / "baselines/t1.toml").exists()


def test_run_from_a_subfolder_finds_the_manifest_upward_and_says_where(project) -> None:
    from harness import warm_evalrun

    proj = project({"manifest.toml": eval_entry("only"), "evals/only/score.py": _two_checks(["c"])})
    sub = proj.root / "evals/only/deeper"
    sub.mkdir()
    r = warm_evalrun(sub, "t1", env=proj.env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"evalrun: using {proj.root / 'manifest.toml'} (no manifest.toml here; found in a folder above" in r.stderr
    assert (proj.root / ".evalrun/results/t1.json").is_file() and not (sub / ".evalrun").exists()
    # An explicit --manifest is taken as given, and a repository's root stops the search.
    assert warm_evalrun(sub, "t1", "-m", "manifest.toml", env=proj.env()).returncode == 2
    (proj.root / "evals/.git").mkdir()
    stopped = warm_evalrun(sub, "t1", env=proj.env())
    assert stopped.returncode == 2 and "manifest.toml: no such file" in stopped.stderr, stopped.stderr


def test_an_embedded_postgres_service_without_the_postgres_extra_is_one_line(project) -> None:
    import subprocess
    import sys

    proj = project({
        "manifest.toml": '[services.db]\npostgres = "embedded"\n\n'
                         + eval_entry("needs-db", tier="t2", extra='services = ["db"]'),
        "evals/needs-db/score.py": _two_checks(["c"]),
    })
    # The package hidden from evalrun's own process, as where the extra was not installed.
    hide = "import sys; sys.modules['embedded_postgres'] = None; sys.argv = ['evalrun', 't2']; " \
           "from evalrun.__main__ import main; main()"
    r = subprocess.run([sys.executable, "-c", hide], cwd=proj.root, env=proj.env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    line = ('service db: postgres = "embedded" needs evalrun\'s postgres extra (the embedded-postgres package), '
            "which is not installed: add [postgres] to the evalrun-gate line of your requirements")
    assert line in r.stdout + r.stderr, r.stdout + r.stderr
    assert proj.eval_result("needs-db", "t2")["message"].count("postgres extra") == 1


def test_record_names_each_eval_that_recorded_nothing_with_its_reason(tmp_path) -> None:
    """In-process: which t3 evals of a --record run are named, and why (the run above shows it end to end)."""
    from evalrun.manifest import load_manifest
    from evalrun.run.collect import _recorded_nothing
    from evalrun.plan import make_plan
    from evalrun.results import EvalResult, Status

    (tmp_path / "manifest.toml").write_text(
        "".join(eval_entry(n, tier="t3", extra=extra) for n, extra in (
            ("plain", ""), ("silent", "model = true"), ("called", "model = true"), ("skipped", ""))))
    for name in ("plain", "silent", "called", "skipped"):
        (tmp_path / "evals" / name).mkdir(parents=True)
    manifest = load_manifest(tmp_path / "manifest.toml")
    planned = make_plan(manifest, "t3", [], []).evals
    results = [EvalResult(name=n, tier="t3", dir=f"evals/{n}", status=s, models=m) for n, s, m in (
        ("plain", Status.PASSED, None), ("silent", Status.PASSED, {"calls": 0}),
        ("called", Status.PASSED, {"calls": 2}), ("skipped", Status.SKIPPED, None))]
    lines = _recorded_nothing(manifest, planned, results)
    assert len(lines) == 2, lines
    assert lines[0].startswith("--record: plain recorded nothing: it has no model = true"), lines[0]
    assert lines[1].startswith("--record: silent recorded nothing: it made no model call through evalrun's proxy"), lines
