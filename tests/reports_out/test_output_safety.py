"""Scorer text never becomes a workflow command or an escape sequence, on any output path.

GitHub's runner reads any stdout or stderr line that starts with ``::`` (after
leading whitespace; also the legacy ``##[``) as a workflow command, and splits
lines at a lone CR as well as at LF. Everything a scorer, a report, a fixture or
the history can put into evalrun's output passes ``evalrun.text.neutralise``
(docs/output-safety.md). Here Hypothesis builds results full of forged
commands and control characters and drives them, in process, through every
real rendering function: the plain console (CI), the terminal (colour and the
live progress bar), GitHub annotations, the step summary, JUnit, Markdown, the
HTML report, ``evalrun history`` (text and JSON) and ``evalrun dry``.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalrun.reports_out.summary import report
from evalrun.run.deliver import write
from evalrun.run.requests import Outputs
from evalrun.commands.dry import DryRequest, dry
from evalrun.commands.history import HistoryRequest, ImportRequest, import_results, show_history
from harness import an_eval, manifest
from harness.session import make_context, make_session
from evalrun.history.records import GitInfo, make_record
from evalrun.reports_out.github import github_annotations
from evalrun.reports_out.html import render_report
from evalrun.reports_out.terminal import Console
from evalrun.results import (
    BaselineChange,
    BaselineComparison,
    CheckResult,
    EvalResult,
    RunResults,
    Status,
    write_results,
)
from evalrun.text import cut, neutralise, one_line, shorten, truncate

SETTINGS = settings(
    max_examples=40,
    deadline=None,  # a shared, loaded machine: no per-example stopwatch
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Pieces an attacker would splice in: forged commands after every line break GitHub (or a terminal,
# or a Unicode-aware viewer) might honour, escape sequences, C0/C1 controls, bidi overrides, and the
# characters the annotation escaping itself must handle.
HOSTILE = [
    "\r::add-mask::hidden", "\r::error file=forged.py,line=1::forged", "\n::error::forged", "\r\n::warning::crlf",
    "\u2028::error::ls", "\u2029::notice::ps", "\x85::error::nel", "\x0b::error::vt", "\x0c::error::ff",
    "\x1c::error::fs", "\x1e::group::rs", "::error::start", "  ::set-output name=x::y", "\t::debug::tab",
    "\u00a0::error::nbsp", "##[error]legacy", " ##[group]g", "::", "\x1b[2J", "\x1b]0;title\x07", "\x1bc",
    "\x1b[31m", "\x1b[", "\x9b2J", "\x9d0;t\x9c", "\x00", "\x07", "\x08", "\x7f", "\u202e", "\u2066",
    "%0A::error::pct", "%", ":", ",", "|", "<b>", "`", "\\x1b", "\n", "\r", "\t", " ",
]
_hostile = st.lists(st.sampled_from(HOSTILE) | st.text(max_size=4), max_size=5).map("".join)
# Lone surrogates are left out: a results file cannot hold them (issue 19's "every way out" class).
_text = st.one_of(_hostile, st.text(st.characters(exclude_categories=["Cs"]), max_size=8)).filter(
    lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)
)
_name = _text.filter(bool)

# Splitting as GitHub's runner (LF, CR, CRLF) and every other line boundary a reader might honour.
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# No control character, C0 or C1, nor a Unicode line break or bidi override, may reach an output;
# a newline between lines and a tab are the output's own.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# What evalrun's own annotations look like: ``::error file=...,title=...::data``, properties escaped.
_ANNOTATION = re.compile(r"::(error|warning) (?:file=[^:,]*,)?title=[^:,]*::(.*)")


def _command_lines(text: str) -> list[str]:
    """The lines GitHub would read as workflow commands (``::`` or ``##[`` after leading whitespace)."""
    return [line for line in _LINE_BREAK.split(text) if line.lstrip().startswith(("::", "##["))]


def assert_inert(text: str, where: str, commands: list[str] | None = None) -> None:
    """No control character in ``text`` and no workflow command but evalrun's own ``commands``."""
    found = _CONTROL.search(text)
    assert found is None, f"{where}: control character {found.group()!r} in {text[max(0, found.start() - 60):found.end() + 60]!r}"
    assert _command_lines(text) == (commands or []), f"{where}: forged workflow command"


def _unescape_data(data: str) -> str:
    return data.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _check() -> st.SearchStrategy[CheckResult]:
    return st.builds(
        CheckResult, name=_name, assertions=st.integers(0, 3), passed=st.booleans(),
        message=st.none() | _text, evidence=st.none() | _text,
    )


@st.composite
def _eval(draw: st.DrawFn, index: int) -> EvalResult:
    status = draw(st.sampled_from(list(Status)))
    name = f"{draw(_name)}{index}"  # names are unique in a run
    return EvalResult(
        name=name, tier="t1", dir=draw(_text), status=status, message=draw(st.none() | _text),
        checks=draw(st.lists(_check(), max_size=3, unique_by=lambda c: c.name)),
        metrics=draw(st.dictionaries(_text, _text | st.integers(), max_size=2)),
        duration_s=1.0, output_tail=draw(_text),
        models=draw(st.none() | st.builds(lambda p, m: {"provider": p, "models": [m], "calls": 1, "mode": "replay"},
                                          _text, _text)),
    )


@st.composite
def _results(draw: st.DrawFn) -> RunResults:
    evals = [draw(_eval(i)) for i in range(draw(st.integers(1, 3)))]
    changes = st.builds(
        lambda e, c, m: BaselineChange(eval=e, check=c, kind="vanished-check", baseline=2, message=m),
        st.sampled_from([e.name for e in evals]) | _name, _name, _text,
    )
    baseline = draw(st.none() | st.builds(
        lambda regressions, stale, not_compared: BaselineComparison(
            path="baselines/t1.toml", exists=True, regressions=regressions, stale=stale, not_compared=not_compared),
        st.lists(changes, max_size=2), st.lists(changes, max_size=2), st.lists(_name, max_size=2),
    ))
    return RunResults(evalrun_version="0", tier="t1", manifest="manifest.toml", started_at="2026-12-01T00:00:00+00:00",
                      finished_at="2026-12-01T00:00:01+00:00", evals=evals, baseline=baseline,
                      exit_code=draw(st.sampled_from([0, 1, 3, 4])))


@SETTINGS
@given(_results())
def test_no_output_path_lets_report_content_become_a_command_or_an_escape(results: RunResults) -> None:
    with tempfile.TemporaryDirectory(prefix="evalrun-safety-") as scratch:
        folder = Path(scratch)
        outputs = Outputs(results=folder / "r.json", junit=folder / "j.xml", markdown=folder / "m.md")
        summary = folder / "summary.md"
        env = {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}

        # Plain lines (CI, piped), with the annotations GitHub reads from the same stream.
        plain = io.StringIO()
        console = Console(plain, env=env)
        for result in results.evals:
            console.eval_finished(result)
        (folder / "manifest.toml").write_text("")
        write(results, outputs, make_context(folder / "manifest.toml", env, console=console))
        report(results, console, outputs)
        annotations = github_annotations(results)
        assert_inert(plain.getvalue(), "plain console", annotations)
        for line in annotations:
            shape = _ANNOTATION.fullmatch(line)
            assert shape is not None, f"annotation {line!r} is not one of evalrun's own"
            data = _unescape_data(shape.group(2))
            assert _CONTROL.search(data) is None and "\r" not in data, f"annotation text {data!r}"
            assert _command_lines(data) == [], f"annotation text {data!r} holds a command line"

        # The terminal: colour and the live progress bar (rich writes its own escape codes, nothing else may).
        for terminal_env in ({"TERM": "xterm"}, {"FORCE_COLOR": "1", "CI": "true"}):
            screen = _Terminal()
            console = Console(screen, env=terminal_env)
            console.start_progress(len(results.evals), "t1")
            for result in results.evals:
                console.eval_started(result.name)
                console.eval_finished(result)
            console.stop_progress()
            report(results, console, outputs)
            own = re.sub(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[[0-9]*[AK]|\r", "", screen.getvalue())
            assert_inert(own, f"terminal {terminal_env}")

        assert_inert(summary.read_text(encoding="utf-8"), "step summary")
        assert_inert(outputs.markdown.read_text(encoding="utf-8"), "markdown")
        junit = outputs.junit.read_text(encoding="utf-8")
        ET.fromstring(junit.encode())  # still well-formed XML
        assert_inert(junit, "junit")

        assert_inert(render_report([make_record(results, GitInfo(), "run")]), "html")


@settings(SETTINGS, max_examples=20)
@given(_results())
def test_evalrun_history_shows_stored_text_inert(results: RunResults) -> None:
    """``evalrun history``, ``--eval``, ``--check`` and ``--json`` over a real SQLite history of the results."""
    with tempfile.TemporaryDirectory(prefix="evalrun-safety-") as scratch:
        folder = Path(scratch)
        write_results(results, folder / "r.json")
        (folder / "manifest.toml").write_text("[history]\nenabled = true\n", encoding="utf-8")
        views: list[tuple[dict[str, str], bool]] = [({}, False), ({}, True)]
        first = next((e for e in results.evals if e.checks), None)  # --eval/--check name a check that is there
        if first is not None:
            views += [({"eval_name": first.name}, False), ({"eval_name": first.name, "check": first.checks[0].name}, True)]
        environ = {"EVALRUN_HISTORY_URL": f"sqlite:{folder / 'h.sqlite'}"}
        # the history is where the session's environment says
        import_results(ImportRequest(paths=[folder / "r.json"]), make_session(folder / "manifest.toml", environ))
        for narrowed, as_json in views:
            shown = io.StringIO()
            show_history(HistoryRequest(tier=None, last=5, as_json=as_json, **narrowed),
                         make_session(folder / "manifest.toml", environ, console=Console(shown, env={"CI": "true"})))
            assert_inert(shown.getvalue(), f"history {narrowed} json={as_json}")
            if as_json and narrowed:
                assert first is not None
                assert json.loads(shown.getvalue())["checks"][0]["check"] == first.checks[0].name  # the data, exact


_eval_name = _name.map(str.strip).filter(lambda s: s and "/" not in s and "\n" not in s)


@SETTINGS
@given(names=st.lists(_eval_name, min_size=1, max_size=2, unique=True), tag=_name, skip_reason=_text)
def test_dry_shows_manifest_text_inert(names: list[str], tag: str, skip_reason: str) -> None:
    with tempfile.TemporaryDirectory(prefix="evalrun-safety-") as scratch:
        root = Path(scratch)
        (root / "evals").mkdir()
        (root / "manifest.toml").write_text(manifest(
            *(an_eval(name, ["python", tag], dir="evals", tags=[tag]) for name in names),
            tiers={"t1": {"experiments": ["x", "y"]}},
            experiments={"x": {"env": {"A": "1"}},
                         "y": {"env": {"A": "2"}, "skip": {"evals": [names[0]], "reason": skip_reason}}},
        ).text, encoding="utf-8")
        shown = io.StringIO()
        try:
            dry(DryRequest(root / "manifest.toml", "t1"),
                make_session(root / "manifest.toml", console=Console(shown, env={"CI": "true"})))
        except Exception as exc:
            # A manifest that refuses a generated name is fine (one line, exit 2); printing it raw is not.
            assert type(exc).__name__ == "ManifestError", exc
            assert_inert(str(exc), "manifest error")
            return
        assert_inert(shown.getvalue(), "dry")


# --- the function itself ---------------------------------------------------------------------------------


@settings(max_examples=250, deadline=None)
@given(st.text(st.characters(), max_size=40) | _hostile, st.booleans())
def test_neutralised_text_is_inert_stable_and_stays_so_when_cut(text: str, lines: bool) -> None:
    shown = neutralise(text, lines=lines)
    assert _CONTROL.search(shown) is None and "\r" not in shown and not re.search("[\ud800-\udfff]", shown)
    assert ("\n" in shown) <= lines
    assert _command_lines(shown) == []
    assert neutralise(shown, lines=lines) == shown  # idempotent: a second gate changes nothing
    for limit in range(0, len(shown) + 1, 3):  # a cut after neutralising cannot revive a control
        for piece in (truncate(shown, limit), cut(shown, limit), shorten(shown, max(limit, 1)), one_line(shown, max(limit, 4))):
            assert _CONTROL.search(piece.replace("\n", " ")) is None


@pytest.mark.parametrize(
    ("raw", "one", "block"),
    [
        ("reason\r::add-mask::x\r::error file=f.py,line=1::y", r"reason\r::add-mask::x\r::error file=f.py,line=1::y",
         r"reason\r::add-mask::x\r::error file=f.py,line=1::y"),
        ("first\n::error::forged", r"first\n::error::forged", "first\n\\x3a:error::forged"),
        ("a\r\nb", r"a\r\nb", "a\nb"),
        ("::error::x", r"\x3a:error::x", r"\x3a:error::x"),
        ("  ##[group]x", r"  \x23#[group]x", r"  \x23#[group]x"),
        ("\x1b[31mred\x1b[0m \x1b[2Jclear \x1b]0;t\x07", r"\x1b[31mred\x1b[0m \x1b[2Jclear \x1b]0;t\x07",
         r"\x1b[31mred\x1b[0m \x1b[2Jclear \x1b]0;t\x07"),
        ("\x9b2J \x85 \u2028 \u202e \x00 \x7f", r"\x9b2J \x85 \u2028 \u202e \x00 \x7f", r"\x9b2J \x85 \u2028 \u202e \x00 \x7f"),
        ("x\ud800", r"x\ud800", r"x\ud800"),
        ("tab\tstays; std::vector and tests/a.py::test stay", "tab\tstays; std::vector and tests/a.py::test stay",
         "tab\tstays; std::vector and tests/a.py::test stay"),
    ],
)
def test_neutralise_shows_what_it_changed(raw: str, one: str, block: str) -> None:
    assert neutralise(raw) == one
    assert neutralise(raw, lines=True) == block


def test_annotations_escape_per_the_workflow_command_rules_around_neutralised_text() -> None:
    result = EvalResult(
        name="a:b,c", tier="t1", dir="evals/a:b,c", status=Status.FAILED, message="50% done\r\nnext\x1b[2J",
        checks=[CheckResult(name="x\r::error::forged", assertions=1, passed=False, message="m\n::warning::w")],
    )
    results = RunResults(evalrun_version="0", tier="t1", manifest="m", started_at="s", evals=[result], exit_code=1)
    assert github_annotations(results) == [
        "::error file=evals/a%3Ab%2Cc,title=evalrun a%3Ab%2Cc::50%25 done%0Anext\\x1b[2J%0A"
        "1 failed check: x\\r::error::forged: m%0A\\x3a:warning::w"
    ]


def test_the_terminal_shows_markup_and_emoji_codes_in_scorer_text_as_written() -> None:
    screen = _Terminal()
    console = Console(screen, env={"TERM": "xterm", "CI": "true"})
    result = EvalResult(name="e", tier="t1", dir="evals/e", status=Status.FAILED,
                        message='check "[bold red]PASS[/] :white_check_mark:" failed\x1b[2J')
    console.eval_finished(result)
    console.summary([replace(result, name="[blink]e[/] :tada:")])
    shown = re.sub(r"\x1b\[[0-9;]*m", "", screen.getvalue())
    assert '"[bold red]PASS[/] :white_check_mark:" failed\\x1b[2J' in shown
    assert "[blink]e[/] :tada:" in shown


def test_neutralising_never_joins_pieces_of_a_key_the_redaction_saw_apart() -> None:
    key = "sk-proj-NEUTRALISE-NEVER-JOINS-0123456789"
    pieces = [key[i:i + 6] for i in range(0, len(key), 6)]  # shorter than any fragment the redaction looks for
    for glue in ("\x1b[m", "\x1b[0m", "\x00", "\r\n"):
        screen = io.StringIO()
        Console(screen, env={"CI": "true"}, secrets={key}).line("check " + glue.join(pieces))
        assert key not in screen.getvalue(), glue
        assert key not in neutralise(glue.join(pieces)) and key not in neutralise(glue.join(pieces), lines=True)


@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010) | st.characters(), max_size=60),
       st.integers(min_value=0, max_value=80))
def test_truncate_never_raises_on_a_lone_surrogate(text: str, limit: int) -> None:
    # A report's "\ud800" escape, or an output decoded with surrogateescape, reaches evidence and Markdown.
    kept = truncate(text, limit)
    assert not re.search("[\ud800-\udfff]", kept)
    kept.encode("utf-8")  # strict: what is written must be UTF-8


def test_a_lone_surrogate_in_scorer_text_is_written_as_u_fffd_by_truncate() -> None:
    assert truncate("x\ud800y") == "x\ufffdy"
    assert truncate("x" * 10 + "\udfff" + "y" * 10, 13).startswith("x" * 10 + "\ufffd\n")  # U+FFFD: 3 bytes
