"""The command line: parse arguments, call one command function, map errors.

Nothing here decides anything. Each command is a function in
``evalrun/commands/`` that takes typed arguments and returns an exit code;
``EvalrunError`` becomes one line on stderr and its exit code, Ctrl-C 130, and
anything unexpected a short message with the traceback saved to a log.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from evalrun import __version__
from evalrun.errors import EvalrunError, ExitCode

app = typer.Typer(
    name="evalrun",
    help="A gate for eval suites that can fail: tiered manifest, loud skips, scorer subprocesses, baseline diff.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
baseline_app = typer.Typer(help="Write or inspect the committed baseline of check names and assertion counts.")
app.add_typer(baseline_app, name="baseline")
replay_app = typer.Typer(help="The record/replay model proxy.", no_args_is_help=True)
app.add_typer(replay_app, name="replay")

ManifestOpt = Annotated[Path, typer.Option("--manifest", "-m", help="Path of the manifest.")]
EvalOpt = Annotated[Optional[list[str]], typer.Option("--eval", "-e", help="Only this eval (repeatable).")]
TagOpt = Annotated[Optional[list[str]], typer.Option("--tag", "-t", help="Only evals with this tag (repeatable).")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", help="Scorers run at once (default: the CPU count).", min=0)]
JsonOpt = Annotated[Optional[Path], typer.Option("--json", help="Results file (default .evalrun/results/<tier>.json).")]
StrictOpt = Annotated[bool, typer.Option("--strict-baseline", help="A stale baseline is a regression too.")]
NoSkipsOpt = Annotated[bool, typer.Option("--no-skips", help="Every skip of this run is a failure.")]
JunitOpt = Annotated[Optional[Path], typer.Option("--junit", help="Also write JUnit XML here.")]
MarkdownOpt = Annotated[Optional[Path], typer.Option("--markdown", help="Also write a Markdown summary here.")]
ChangedOpt = Annotated[
    Optional[str], typer.Option("--changed-since", help="Only evals whose folder or paths changed since this git ref.")
]
ShardOpt = Annotated[Optional[str], typer.Option("--shard", help="Run shard I of N (e.g. 2/3); combine with merge.")]
CleanOpt = Annotated[bool, typer.Option("--clean-checkout", help="Run from git archive HEAD in a temporary folder.")]
RecordOpt = Annotated[bool, typer.Option("--record", help="t3: record the model answers as replay fixtures.")]
HtmlOpt = Annotated[
    Optional[Path], typer.Option("--html", help="Also write the HTML report (this run and the last runs) here.")
]
WorktreeOpt = Annotated[
    bool, typer.Option("--worktree", help="With --clean-checkout: lay uncommitted changes of tracked files on top.")
]

DEFAULT_MANIFEST = Path("manifest.toml")


def _call(fn: Callable[..., int], *args: object, **kwargs: object) -> None:
    try:
        code = fn(*args, **kwargs)
    except EvalrunError as exc:
        typer.echo(f"evalrun: error: {exc}", err=True)
        raise typer.Exit(int(exc.exit_code)) from None
    raise typer.Exit(code)


def _console():  # noqa: ANN202 - imported lazily to keep --version fast
    from evalrun.console import Console

    return Console()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalrun {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """evalrun: run a tier of evals and gate on the result."""


def _run_options(
    manifest_path: ManifestOpt = DEFAULT_MANIFEST,
    evals: EvalOpt = None,
    tags: TagOpt = None,
    jobs: JobsOpt = 0,
    json_path: JsonOpt = None,
    strict_baseline: StrictOpt = False,
    no_skips: NoSkipsOpt = False,
    junit_path: JunitOpt = None,
    markdown_path: MarkdownOpt = None,
    changed_since: ChangedOpt = None,
    shard: ShardOpt = None,
    clean_checkout: CleanOpt = False,
    worktree: WorktreeOpt = False,
    record: RecordOpt = False,
    html_path: HtmlOpt = None,
) -> None:
    """The options of every run command, named as RunOptions' fields: typer reads this signature."""


def _run_command(name: str, tier: str | None, summary: str) -> None:
    """Register ``evalrun t1`` (tier fixed) or ``evalrun run --tier T`` with the shared options."""

    def command(**options: Any) -> None:
        from evalrun.commands.run import RunOptions, run_tier

        chosen = options.pop("tier", tier)
        options["evals"], options["tags"] = list(options["evals"] or []), list(options["tags"] or [])
        _call(run_tier, RunOptions(tier=chosen, **options), _console())

    params = list(inspect.signature(_run_options, eval_str=True).parameters.values())
    if tier is None:
        tier_opt = Annotated[str, typer.Option("--tier", help="t1, t2 or t3.")]
        params.insert(0, inspect.Parameter("tier", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=tier_opt))
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = summary
    app.command(name=name)(command)


_run_command("t1", "t1", "Run tier t1 (static: no services, no database, no model key).")
_run_command("t2", "t2", "Run tier t2 (replay: local services, recorded model answers).")
_run_command("t3", "t3", "Run tier t3 (live: real model calls, within a budget).")
_run_command("run", None, "Run the evals of one tier.")


@app.command()
def merge(
    results: Annotated[list[Path], typer.Argument(help="The shards' results files.")],
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    tier: Annotated[Optional[str], typer.Option("--tier", help="Default: the first file's tier.")] = None,
    json_path: JsonOpt = None,
    strict_baseline: StrictOpt = False,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
) -> None:
    """Combine shard results, check they cover the tier, compare the baseline, decide the exit code."""
    from evalrun.commands.merge import merge_shards

    _call(merge_shards, paths=results, manifest_path=manifest, tier=tier, json_path=json_path,
          strict=strict_baseline, junit=junit, markdown=markdown, console=_console())


@app.command()
def check(manifest: ManifestOpt = DEFAULT_MANIFEST) -> None:
    """Validate the manifest and warn about absolute paths of this machine in eval sources."""
    from evalrun.commands.check import check as check_command

    _call(check_command, manifest_path=manifest, console=_console())


@app.command()
def dry(
    tier: Annotated[Optional[str], typer.Argument(help="t1, t2 or t3 (default: every tier).")] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    eval_: EvalOpt = None,
    tag: TagOpt = None,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Do not run the probes.")] = False,
    changed_since: ChangedOpt = None,
    shard: ShardOpt = None,
) -> None:
    """List the planned runs and whether each would run or skip, and why; run no scorer."""
    from evalrun.commands.dry import dry as dry_command

    _call(dry_command, manifest, tier, list(eval_ or []), list(tag or []), _console(), probe=not no_probe,
          changed_since=changed_since, shard=shard)


@app.command()
def schema(name: Annotated[str, typer.Argument(help="report, manifest or results.")]) -> None:
    """Print a published JSON Schema."""
    from evalrun.commands.schema import schema as schema_command

    _call(schema_command, name)


@baseline_app.callback(invoke_without_command=True)
def baseline(
    ctx: typer.Context,
    update: Annotated[Optional[str], typer.Option("--update", help="Run TIER and write baselines/TIER.toml.")] = None,
    all_tiers: Annotated[bool, typer.Option("--all", help="With --update: every tier of the manifest.")] = False,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    eval_: EvalOpt = None,
    tag: TagOpt = None,
    jobs: JobsOpt = 0,
    from_results: Annotated[
        Optional[Path], typer.Option("--from-results", help="Write from this results file instead of running.")
    ] = None,
) -> None:
    """Write or inspect the committed baseline."""
    if ctx.invoked_subcommand is not None:
        return
    if update is None and not all_tiers:
        typer.echo(ctx.get_help())
        raise typer.Exit(int(ExitCode.USAGE))
    from evalrun.commands.baseline import update_baselines

    tiers = [update] if update else []
    _call(
        update_baselines,
        manifest_path=manifest,
        tiers=tiers,
        all_tiers=all_tiers,
        evals=list(eval_ or []),
        tags=list(tag or []),
        jobs=jobs,
        from_results=from_results,
        console=_console(),
    )


@baseline_app.command("diff")
def baseline_diff(
    tier: Annotated[str, typer.Argument(help="t1, t2 or t3.")],
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    from_results: Annotated[
        Optional[Path], typer.Option("--from-results", help="Results file (default .evalrun/results/<tier>.json).")
    ] = None,
    strict_baseline: StrictOpt = False,
) -> None:
    """Compare the last results with the baseline without running scorers."""
    from evalrun.commands.baseline import diff_baseline

    _call(diff_baseline, manifest_path=manifest, tier=tier, from_results=from_results,
          strict=strict_baseline, console=_console())


@replay_app.command("serve")
def replay_serve(
    fixtures: Annotated[Path, typer.Option("--fixtures", help="Folder of fixtures/<session>/<index>.json.")],
    mode: Annotated[str, typer.Option("--mode", help="replay, record or live.")] = "replay",
    upstream: Annotated[Optional[str], typer.Option("--upstream", help="The provider's base URL (record, live).")] = None,
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (default: any free one).")] = 0,
    eval_name: Annotated[str, typer.Option("--eval", help="Session name when no X-Evalrun-Session is sent.")] = "serve",
) -> None:
    """Run the proxy in the foreground until Ctrl-C."""
    from evalrun.commands.replay import serve

    _call(serve, fixtures, mode, upstream, port, eval_name)

# ---------------------------------------------------------------- history, report, init


@app.command()
def history(
    words: Annotated[
        Optional[list[str]], typer.Argument(help="[TIER], or: import RESULTS... (load results files).")
    ] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    eval_: Annotated[Optional[str], typer.Option("--eval", "-e", help="Per check of this eval.")] = None,
    check_: Annotated[Optional[str], typer.Option("--check", "-c", help="Per run for checks of this name.")] = None,
    last: Annotated[int, typer.Option("--last", help="How many recent runs.", min=1)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for machines.")] = False,
    shards: Annotated[bool, typer.Option("--shards", help="Also the runs of single shards (merged runs hold them).")] = False,
) -> None:
    """Show past runs, or each check's status per run and since when it fails; `history import` loads results files."""
    from evalrun.commands.history import import_results, show_history

    words = list(words or [])
    if words[:1] == ["import"]:
        _call(import_results, manifest_path=manifest, paths=[Path(w) for w in words[1:]], console=_console())
    if len(words) > 1:
        _call(_usage, f"history: expected at most one TIER, got {' '.join(words)}")
    _call(show_history, manifest_path=manifest, tier=words[0] if words else None, eval_name=eval_, check=check_,
          last=last, as_json=as_json, console=_console(), shards=shards)


@app.command()
def report(
    tier: Annotated[Optional[str], typer.Argument(help="t1, t2 or t3 (default: the tier of the latest run).")] = None,
    html: Annotated[Optional[Path], typer.Option("--html", help="Write the self-contained HTML report here.")] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    last: Annotated[int, typer.Option("--last", help="How many recent runs the trends show.", min=1)] = 30,
) -> None:
    """Write a report of the latest run and the trends of the last runs."""
    from evalrun.commands.report import write_report

    _call(write_report, manifest_path=manifest, tier=tier, html=html, last=last, console=_console())


@app.command()
def init(
    folder: Annotated[Path, typer.Argument(help="Where to start (default: here).")] = Path("."),
) -> None:
    """Start a project: a commented manifest, one passing t1 eval, baselines/, and .gitignore for .evalrun/."""
    from evalrun.commands.init import init_project

    _call(init_project, folder=folder, console=_console())


def _usage(message: str) -> int:
    from evalrun.errors import UsageError

    raise UsageError(message)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("evalrun: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except SystemExit:
        raise
    except Exception as exc:  # the one place an unexpected error is caught
        log = _write_crash_log()
        typer.echo(f"evalrun: internal error: {type(exc).__name__}: {exc} (traceback in {log})", err=True)
        sys.exit(70)


def _write_crash_log() -> str:
    import tempfile
    import traceback

    fd, path = tempfile.mkstemp(prefix="evalrun-crash-", suffix=".log")
    with open(fd, "w", encoding="utf-8") as fh:
        fh.write(traceback.format_exc())
    return path
