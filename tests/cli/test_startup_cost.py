"""``evalrun --version`` is answered before typer builds the commands' parsers (its speed is measured in bench/)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from evalrun import __version__
from evalrun.cli import main
from harness import warm_evalrun


def test_version_alone_is_answered_without_building_the_command_line(monkeypatch, capsys) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("typer built the command line to answer --version")

    monkeypatch.setattr(typer.main, "get_command", refuse)
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"evalrun {__version__}\n"


@pytest.mark.parametrize("argv", [["--version", "t1"], ["t1", "--version"]])
def test_version_with_other_words_goes_through_typer_as_before(argv: list[str]) -> None:
    # With other words --version is typer's eager option (first) or a usage error (after a command).
    proc = warm_evalrun(Path.cwd(), *argv, env=dict(os.environ), timeout=60)
    if argv[0] == "--version":
        assert (proc.returncode, proc.stdout) == (0, f"evalrun {__version__}\n")
    else:
        assert proc.returncode == 2 and "--version" in proc.stderr


def test_the_command_prints_the_version_and_exits_zero() -> None:
    # Fresh, not forked: nothing importing evalrun prints may reach the empty stderr.
    proc = subprocess.run([sys.executable, "-m", "evalrun", "--version"], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"evalrun {__version__}\n", "")


def test_a_command_named_first_is_the_only_parser_typer_builds(monkeypatch, tmp_path, capsys) -> None:
    # Typer builds every registered command's parser before it parses: for `evalrun t1` a tenth of evalrun's start.
    built: list[str] = []
    original = typer.main.get_command_from_info

    def counting(command_info, **kwargs):  # noqa: ANN001, ANN003, ANN202 - typer's signature
        built.append(command_info.name or command_info.callback.__name__)
        return original(command_info, **kwargs)

    monkeypatch.setattr(typer.main, "get_command_from_info", counting)
    assert main(["check", "--manifest", str(tmp_path / "absent.toml")]) == 2
    assert built == ["check"]
    assert "absent.toml" in capsys.readouterr().err  # the command ran, and said what was wrong


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version", "t1"], ["baseline", "--update", "t1"], ["merg"], ["-x"]])
def test_anything_but_a_command_first_gets_the_whole_app(argv: list[str]) -> None:
    # A group, an option or a misspelt word: typer's own answer (help, "did you mean", the group's commands) needs all.
    from evalrun.cli import _app_for, app

    assert _app_for(argv) is app


# Imported only by the runs that use them (each import is local, with the reason beside it): a plain t1 run
# of one scorer must not load them. Fresh, not forked from the suite's warm zygote, which holds them all.
NOT_FOR_A_PLAIN_T1_RUN = (
    "evalrun.probes.run",  # no probe (evalrun.run.preconditions)
    "evalrun.selection.shards",  # no --shard (evalrun.run.select.select)
    "evalrun.selection.changed",  # no --changed-since
    "evalrun.selection.timings", "statistics",  # one eval: no durations to read (evalrun.run.select._timings)
    "evalrun.reports_out.html", "evalrun.reports_out.junit", "evalrun.reports_out.markdown",  # no --html/--junit/--markdown
    "pickle",  # the run phase is not forked (evalrun.run.isolation._run_forked)
    "evalrun.reports_in.crash_line",  # no scorer crashed (evalrun.reports_in.rules.explain_failure)
    "evalrun.models.failures",  # no model call failed (evalrun.run.model_calls)
    "evalrun.process_table",  # /proc is here: no ps (evalrun.leftovers)
    "evalrun.stats",  # nothing repeats, no judge has anchors (evalrun.repeats, evalrun.baseline.rates, evalrun.calibration)
    "evalrun.reports_in.report_model",  # the report's published model: only the schema (evalrun.reports_in.json_report)
    "evalrun.reports_in.positional",  # no check name can be a position (evalrun.run.deliver.maybe_positional)
    "evalrun.baseline.update", "evalrun.baseline.write",  # a run never writes its baseline (evalrun.baseline)
    "evalrun.calibration",  # no eval has anchors (evalrun.run.pipeline.judge)
    "evalrun.services.postgres", "evalrun.services.postgres_cache",  # no postgres service (evalrun.services.manager)
)


def test_a_plain_t1_run_imports_only_what_it_uses_and_builds_no_results_validator(tmp_path: Path) -> None:
    (tmp_path / "evals" / "a").mkdir(parents=True)
    (tmp_path / "evals" / "a" / "score.py").write_text(
        "import json, os\n"
        "with open(os.environ['EVALRUN_REPORT'], 'w') as fh:\n"
        "    json.dump({'checks': [{'name': 'c', 'assertions': 1, 'passed': True}]}, fh)\n"
    )
    (tmp_path / "manifest.toml").write_text(
        '[[evals]]\nname = "a"\ntier = "t1"\ndir = "evals/a"\nrun = ["python", "score.py"]\n\n'
        '[tiers.t1]\nnetwork = "host"\n'  # no namespace: the same run as root or not
    )
    code = (
        "import gc, sys\n"
        "import evalrun.collector as collector\n"
        "seen, pause, resume = [], collector.pause, collector.resume\n"
        "def paused():\n"
        "    pause()\n"
        "    seen.append(gc.get_stats()[0]['collections'])\n"
        "def resumed():\n"
        "    seen.append((gc.isenabled(), gc.get_stats()[0]['collections'] - seen.pop()))\n"
        "    resume()\n"
        "collector.pause, collector.resume = paused, resumed\n"
        # Every TypeAdapter the run builds, by the type it validates.
        "import pydantic.type_adapter as ta\n"
        "built, init = [], ta.TypeAdapter.__init__\n"
        "ta.TypeAdapter.__init__ = lambda self, tp, *a, **k: (built.append(repr(tp)), init(self, tp, *a, **k))[1]\n"
        "sys.argv = ['evalrun', 't1']\n"
        "from evalrun.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        f"print('LOADED', sorted(m for m in {NOT_FOR_A_PLAIN_T1_RUN!r} if m in sys.modules))\n"
        "print('COLLECTOR', seen, gc.isenabled(), gc.get_freeze_count() > 0)\n"
        # The run builds its records and writes them: no validator of a results record, neither a model's (built
        # with its class) nor an adapter's (evalrun.results validates only a file it reads); and a report of the
        # schema's own types is checked without building the report's (evalrun.reports_in.json_report._fits).
        "import evalrun.results as R\n"
        "print('VALIDATORS', sorted(n for n, c in vars(R).items() if isinstance(c, type) and c.__module__ == R.__name__"
        " and hasattr(c, '__pydantic_validator__')), sorted(t for t in built if 'evalrun.' in t))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_"))}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=dict(env, CI="1"), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout.splitlines(), proc.stdout
    assert "VALIDATORS [] []" in proc.stdout.splitlines(), proc.stdout
    # The collector was off from the entry point to the session (no collection while evalrun started), then on
    # again for the run, with what the start made frozen out of its way (evalrun.collector).
    assert "COLLECTOR [(False, 0)] True True" in proc.stdout.splitlines(), proc.stdout


def test_the_collector_is_resumed_only_where_evalrun_paused_it() -> None:
    # A caller with the collector on (the tests' own main() calls) is left as it was: nothing frozen.
    import gc

    from evalrun import collector

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    collector.resume()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    # A caller whose collector was already off keeps it off: pause took nothing it could give back.
    gc.disable()
    try:
        collector.pause()
        collector.resume()
        assert not gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.enable()
