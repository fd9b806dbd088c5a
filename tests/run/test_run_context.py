"""One owner of a run's state (evalrun.run.context): the secrets and the scrubbed environment are worked out once a run.

The runs here go through the real pipeline in this process (real scorer
subprocesses, the real model proxy), so every call of the functions that
derive a run's state from its environment can be counted, wherever in the
package it is made.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import evalrun.secrets
from evalrun.run.context import RunContext
from evalrun.manifest import load_manifest
from evalrun.models import scorer_env
from evalrun.run.pipeline import run
from evalrun.run.requests import RunRequest
from evalrun.reports_out.terminal import Console
from evalrun.secrets import PLACEHOLDER, RunSecrets, known_secrets
from evalrun.workspace import Workspace
from harness import an_eval, manifest
from harness.session import make_session

KEY = "sk-run-context-key-0123456789"
EXTRA_KEY = "acme-key-value-9876543210"
TOKEN = "ghp_runcontexttoken12345"

# A t2 eval that uses models starts the model proxy; network = "host" keeps the run in this process
# (no isolation child), so each call made anywhere is seen here. The scorer makes no model call.
def _manifest(key_var: str = "ACME_LLM_CRED") -> str:
    return manifest(an_eval("a", tier="t2"), tiers={"t1": {"description": "static"},
                    "t2": {"description": "replay", "network": "host", "model": True}},
                    models={"key_vars": [key_var]}).text


MANIFEST = _manifest()
SCORER = """
import json, os
seen = {name: os.environ.get(name, "") for name in ("OPENAI_API_KEY", "ACME_LLM_CRED", "SOME_TOKEN")}
ok = seen["OPENAI_API_KEY"] == "%s" and seen["ACME_LLM_CRED"] == "%s"
json.dump({"checks": [{"name": "no key, and the token shows redacted", "assertions": 1, "passed": ok,
                       "message": "token " + seen["SOME_TOKEN"]}]}, open(os.environ["EVALRUN_REPORT"], "w"))
""" % (PLACEHOLDER, PLACEHOLDER)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "evals" / "a").mkdir(parents=True)
    (tmp_path / "manifest.toml").write_text(MANIFEST, encoding="utf-8")
    (tmp_path / "evals" / "a" / "score.py").write_text(SCORER, encoding="utf-8")
    return tmp_path


def _environ(root: Path) -> dict[str, str]:
    import os

    keep = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_") and k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    return {**keep, "OPENAI_API_KEY": KEY, "ACME_LLM_CRED": EXTRA_KEY, "SOME_TOKEN": TOKEN,
            "EVALRUN_HISTORY_URL": f"sqlite:{root / 'history.sqlite'}"}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """Every call, from any module, of the functions that derive a run's state from an environment."""
    counted: dict[str, list[Any]] = {}
    originals: dict[str, Callable[..., Any]] = {
        "known_secrets": evalrun.secrets.known_secrets,
        "key_values": evalrun.secrets.key_values,
        "secret_like_values": evalrun.secrets.secret_like_values,
        "scrub_environment": scorer_env.scrub_environment,
    }

    def counting(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counted.setdefault(name, []).append(args[0] if args else kwargs)
            return original(*args, **kwargs)

        return wrapper

    wrappers = {name: counting(name, fn) for name, fn in originals.items()}
    for module in [m for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("evalrun")]:
        for name, fn in originals.items():
            if getattr(module, name, None) is fn:
                monkeypatch.setattr(module, name, wrappers[name])
    yield counted


def test_one_run_works_its_secrets_and_scrubbed_environment_out_once(suite: Path, calls: dict[str, list[Any]]) -> None:
    out = io.StringIO()
    request = RunRequest(manifest_path=suite / "manifest.toml", tier="t2", jobs=1)
    code = run(request, make_session(suite / "manifest.toml", _environ(suite), console=Console(out, env={})))
    assert code == 0, out.getvalue()
    # Counted, never shown: a failing assertion must not print the environment.
    with_run_env = {name: sum(1 for e in found if hasattr(e, "get") and e.get("SOME_TOKEN") == TOKEN)
                    for name, found in calls.items()}
    with_run_env = {name: count for name, count in with_run_env.items() if count}
    assert with_run_env == {
        "known_secrets": 1,  # the one entry point, once
        "key_values": 1,  # inside known_secrets only: the model proxy is handed the keys
        "secret_like_values": 1,  # inside known_secrets only: services are handed them
        "scrub_environment": 1,  # for probes, services and scorers alike
    }
    shown = out.getvalue() + (Workspace(suite).results("t2")).read_text(encoding="utf-8")
    assert "model calls: replay through" in out.getvalue()  # the proxy ran
    assert TOKEN not in shown and "token [redacted by evalrun]" in shown


def test_the_context_holds_each_part_once_worked_out(suite: Path) -> None:
    manifest = load_manifest(suite / "manifest.toml")
    environ = _environ(suite)
    context = RunContext.build(make_session(suite / "manifest.toml", environ), "t2", manifest)
    assert context.tier == "t2" and context.manifest is manifest
    assert context.secrets == known_secrets(environ, ["ACME_LLM_CRED"])
    assert isinstance(context.secrets, RunSecrets)
    assert context.secrets.keys == {KEY, EXTRA_KEY}
    assert {KEY, EXTRA_KEY, TOKEN} <= context.secrets.values
    assert context.scrubbed_env["OPENAI_API_KEY"] == PLACEHOLDER and context.scrubbed_env["ACME_LLM_CRED"] == PLACEHOLDER
    assert context.scrubbed_env["SOME_TOKEN"] == TOKEN  # not a provider key: scrubbed from text, not from the env
    assert context.workspace == Workspace(suite)
    environ["SOME_TOKEN"] = "changed-after-the-start"
    assert context.environ["SOME_TOKEN"] == TOKEN  # what the run read is what it keeps
    with pytest.raises(TypeError):
        context.scrubbed_env["OPENAI_API_KEY"] = KEY  # type: ignore[index]


def test_the_probe_environment_is_the_scrubbed_one_with_the_manifest_s_pythonpath(suite: Path) -> None:
    (suite / "src").mkdir()
    (suite / "manifest.toml").write_text('pythonpath = ["src"]\n' + MANIFEST, encoding="utf-8")
    manifest = load_manifest(suite / "manifest.toml")
    context = RunContext.build(make_session(suite / "manifest.toml", _environ(suite)), "t2", manifest)
    probe_env = context.probe_env()
    assert probe_env["OPENAI_API_KEY"] == PLACEHOLDER
    assert probe_env["PYTHONPATH"].split(":")[0] == str(suite / "src")


# -- what leaves by the side channels: each is handed the secrets its command worked out once -------------------

CRED = "acme-cred-value-5550123"  # under a manifest key variable whose name says nothing secret
CHANNELS_MANIFEST = manifest(an_eval("a"), tiers={"t1": {"description": "static"}},
                             models={"key_vars": ["ACME_LLM_CRED"]}).text
# The scorer writes the value itself: a run without the variable set has nothing to hide, so it is kept as written.
QUOTING = (
    "import json, os\n"
    "json.dump({'checks': [{'name': 'quotes', 'assertions': 1, 'passed': False, 'message': 'said %s'}]},"
    " open(os.environ['EVALRUN_REPORT'], 'w'))\n" % CRED
)


@pytest.fixture
def quoted(project, tmp_path: Path):
    """A project whose last t1 results file holds ``CRED`` in a message, the first history elsewhere."""
    p = project({"manifest.toml": CHANNELS_MANIFEST, "evals/a/score.py": QUOTING})
    first = p.run("t1", env={"EVALRUN_HISTORY_URL": f"sqlite:{tmp_path / 'elsewhere.sqlite'}"})
    assert first.code == 1, first.output
    assert CRED in Workspace(p.root).results("t1").read_text(encoding="utf-8")
    return p


def test_history_import_scrubs_the_manifest_s_key_values(quoted) -> None:
    results = Workspace(quoted.root).results("t1")
    outcome = quoted.run("history", "import", str(results), env={"ACME_LLM_CRED": CRED})
    assert outcome.code == 0, outcome.output
    stored = Workspace(quoted.root).history.read_bytes()
    assert CRED.encode() not in stored and b"said [redacted by evalrun]" in stored


def test_merge_records_the_merged_run_without_the_manifest_s_key_values(quoted, tmp_path: Path) -> None:
    shard = quoted.run("t1", "--shard", "1/1", env={"EVALRUN_HISTORY_URL": f"sqlite:{tmp_path / 'elsewhere.sqlite'}"})
    assert shard.code == 1, shard.output
    results = Workspace(quoted.root).results("t1", "1/1")
    assert CRED in results.read_text(encoding="utf-8")
    outcome = quoted.run("merge", str(results), "--json", str(quoted.root / "merged.json"), env={"ACME_LLM_CRED": CRED})
    assert outcome.code == 1, outcome.output
    stored = Workspace(quoted.root).history.read_bytes()
    assert CRED.encode() not in stored and b"said [redacted by evalrun]" in stored


def test_report_html_from_the_results_file_scrubs_the_manifest_s_key_values(quoted) -> None:
    page = quoted.root / "report.html"
    outcome = quoted.run("report", "--html", str(page), "t1", env={"ACME_LLM_CRED": CRED})
    assert outcome.code == 0, outcome.output
    text = page.read_text(encoding="utf-8")
    assert CRED not in text and "said [redacted by evalrun]" in text


# -- one invocation, one of each: counted through the CLI's entry point, in this process --------------------------

COUNTED_MANIFEST = manifest(
    an_eval("a", requires=["env:COUNTED_PROBE_VAR"],
            bites=[{"name": "broken", "env": {"BREAK_IT": "1"}, "fails": ["works"]}]),
    an_eval("b", dir="evals/a"),
    tiers={"t1": {"description": "static", "network": "host"}}, models={"key_vars": ["ACME_LLM_CRED"]},
    history={"enabled": True},
).text
COUNTED_SCORER = (
    "import json, os\n"
    "json.dump({'checks': [{'name': 'works', 'assertions': 1, 'passed': not os.environ.get('BREAK_IT')}]},"
    " open(os.environ['EVALRUN_REPORT'], 'w'))\n"
)


@pytest.fixture
def counted_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository with two t1 evals (one behind a probe, one with a bite); evalrun's environment set here."""
    from harness.git import git, write

    root = tmp_path / "repo"
    write(root, {"manifest.toml": COUNTED_MANIFEST, "evals/a/score.py": COUNTED_SCORER})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "suite")
    for name in [k for k in __import__("os").environ if k.startswith("EVALRUN_") or k.startswith("GITHUB_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("EVALRUN_HISTORY_URL", f"sqlite:{tmp_path / 'history.sqlite'}")
    monkeypatch.setenv("ACME_LLM_CRED", EXTRA_KEY)
    monkeypatch.setenv("COUNTED_PROBE_VAR", "set")
    return root


@pytest.fixture
def per_invocation(monkeypatch: pytest.MonkeyPatch) -> Callable[..., dict[str, int]]:
    """``invoke(root, *argv)``: run ``evalrun argv`` through ``evalrun.cli.main``, and count, for that one call,
    the secrets worked out, the project's workspaces made, its manifest loaded and its history located."""
    import evalrun.cli
    import evalrun.history.location
    import evalrun.manifest
    import evalrun.workspace

    counted: dict[str, list[Any]] = {}

    def counting(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counted.setdefault(name, []).append(args[0] if args else None)
            return original(*args, **kwargs)

        return wrapper

    originals = {
        "known_secrets": evalrun.secrets.known_secrets,
        "secret_like_values": evalrun.secrets.secret_like_values,
        "load_manifest": evalrun.manifest.load_manifest,
        "locate_history": evalrun.history.location.locate_history,
    }
    wrappers = {name: counting(name, fn) for name, fn in originals.items()}
    __import__("evalrun.run.pipeline"), __import__("evalrun.bites.run"), __import__("evalrun.commands.merge")
    for module in [m for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("evalrun")]:
        for name, fn in originals.items():
            if getattr(module, name, None) is fn:
                monkeypatch.setattr(module, name, wrappers[name])
    monkeypatch.setattr(evalrun.workspace, "Workspace", counting("Workspace", evalrun.workspace.Workspace))

    def invoke(root: Path, *argv: str, code: int = 0) -> dict[str, int]:
        counted.clear()
        evalrun.workspace.workspace_of.cache_clear()  # each invocation makes its own
        got = evalrun.cli.main([*argv, "--manifest", str(root / "manifest.toml")])
        assert got == code, argv
        ours = {"Workspace": root, "load_manifest": root / "manifest.toml"}  # a bite's clean copy is another project
        counts = {name: sum(1 for a in found if name not in ours or Path(a) == ours[name])
                  for name, found in counted.items()}
        return {name: counts.get(name, 0) for name in [*originals, "Workspace"]}

    return invoke


ONCE = {"known_secrets": 1, "secret_like_values": 1, "load_manifest": 1, "Workspace": 1, "locate_history": 1}


def test_each_invocation_works_out_its_secrets_workspace_manifest_and_history_once(
    counted_suite: Path, per_invocation: Callable[..., dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    root = counted_suite
    # A run with a probe (probes scrub with the run's secrets: no second look at the environment).
    assert per_invocation(root, "t1", "-j", "2") == ONCE
    # --html: the page reads the history the run just wrote, located by the same session.
    assert per_invocation(root, "t1", "--html", str(root.parent / "page.html")) == ONCE
    # bites: one context per bite, all from the one session (the clean copies' manifests are their own).
    assert per_invocation(root, "bites", "t1") == {**ONCE, "locate_history": 0}  # bites are never recorded
    # merge: the shards' results, judged and recorded once.
    for index in (1, 2):
        assert evalrun_main(root, "t1", "--shard", f"{index}/2") == 0
    shards = [str(root / ".evalrun" / "results" / f"t1.shard-{i}-of-2.json") for i in (1, 2)]
    assert per_invocation(root, "merge", *shards) == ONCE
    out = capsys.readouterr()
    assert EXTRA_KEY not in out.out + out.err


def evalrun_main(root: Path, *argv: str) -> int:
    import evalrun.cli

    return evalrun.cli.main([*argv, "--manifest", str(root / "manifest.toml")])


@pytest.mark.parametrize("argv", [
    ["run", "--tier", "t9"], ["t1", "--tier", "t9"], ["bites", "t9"], ["dry", "t9"], ["history", "t9"],
    ["show", "a", "t9"], ["report", "t9", "--html", "x.html"], ["baseline", "diff", "t9"], ["merge", "r.json", "--tier", "t9"],
])
def test_every_tier_the_parser_reads_is_checked_there_with_one_sentence(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked as the arguments are parsed: before any manifest is read (there is none here), the same line."""
    import evalrun.cli

    assert evalrun.cli.main([*argv, "--manifest", str(tmp_path / "absent.toml")]) == 2
    assert capsys.readouterr().err == "evalrun: error: unknown tier 't9'; use one of t1, t2, t3\n"


def test_one_call_of_known_secrets_one_workspace_construction_and_no_environ_in_commands() -> None:
    """The source says it too: the session works the secrets out, workspace_of makes the Workspace, no command reads os.environ."""
    import re

    package = Path(evalrun.secrets.__file__).resolve().parent
    sources = {p.relative_to(package).as_posix(): p.read_text(encoding="utf-8") for p in package.rglob("*.py")}

    def callers(pattern: str) -> list[str]:
        return sorted(f"{name}:{n}" for name, text in sources.items()
                      for n, line in enumerate(text.splitlines(), 1)
                      if re.search(pattern, line) and not line.lstrip().startswith(("def ", "class ", "#")))

    assert callers(r"\bknown_secrets\(") == [f"session.py:{_line(sources['session.py'], 'known_secrets(')}"]
    assert callers(r"\bWorkspace\(") == [f"workspace.py:{_line(sources['workspace.py'], 'return Workspace(')}"]
    assert [name for name, text in sources.items() if name.startswith("commands/") and "os.environ" in text] == []


def _line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line and not line.lstrip().startswith("def "))


def test_a_clean_copy_s_manifest_that_names_another_key_variable_adds_its_value(suite: Path) -> None:
    """Under --clean-checkout the committed manifest runs: a key variable only it names is still a secret."""
    environ = {**_environ(suite), "OTHER_CRED": "other-cred-value-31337"}
    session = make_session(suite / "manifest.toml", environ)
    assert session.secrets_for(["ACME_LLM_CRED"]) is session.secrets  # the same manifest: the same set
    (suite / "copy" / "evals" / "a").mkdir(parents=True)
    (suite / "copy" / "manifest.toml").write_text(_manifest("OTHER_CRED"), encoding="utf-8")
    context = RunContext.build(session, "t2", load_manifest(suite / "copy" / "manifest.toml"))
    assert "other-cred-value-31337" in context.secrets.keys and EXTRA_KEY in context.secrets.keys
    assert "other-cred-value-31337" not in session.secrets.values


def test_the_run_s_steps_take_the_context_not_its_parts() -> None:
    """select, collect, judge and deliver take the session or the run's context; none is handed the environment,
    the secrets or the history's locator separately (the state is worked out once and carried)."""
    import inspect

    from evalrun.run import collect, deliver, pipeline, select

    loose = {"environ", "secrets", "locate", "shown"}
    found = {
        f"{module.__name__}.{name}": sorted(loose & set(inspect.signature(fn).parameters))
        for module in (pipeline, select, collect, deliver)
        for name, fn in vars(module).items()
        if inspect.isfunction(fn) and fn.__module__ == module.__name__
    }
    assert {name: params for name, params in found.items() if params} == {
        "evalrun.run.select._timings": ["environ", "locate"],  # the two select hands selection.timings, from the session
    }


def test_every_command_asked_for_something_takes_its_request_and_the_session() -> None:
    """Commands take ``(request, session)``: the CLI builds the request record, the session the state."""
    import importlib
    import inspect

    commands = {
        "run": "run_tier", "bites": "bites", "dry": "dry", "merge": "merge_shards", "baseline": "update_baselines",
        "history": "show_history", "show": "show_eval", "report": "write_report", "init": "init_project",
        "replay": "serve",
    }
    extra = {"baseline": "diff_baseline", "history": "import_results"}
    shapes = {}
    for module, name in [*commands.items(), *extra.items()]:
        fn = getattr(importlib.import_module(f"evalrun.commands.{module}"), name)
        positional = [p.name for p in inspect.signature(fn).parameters.values() if p.kind is not p.KEYWORD_ONLY]
        shapes[f"{module}.{name}"] = positional
    assert {k: v for k, v in shapes.items() if v != ["request", "session"]} == {}
