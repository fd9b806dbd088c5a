"""The command line: parse arguments, call one command function, and the one error boundary.

Nothing here decides anything. Each command is a function in
``evalrun/commands/`` that takes typed arguments and the invocation's one
``evalrun.session.Session`` (made here, from the only read of ``os.environ``
a command's state comes from) and returns an exit code.
``main`` is the only place errors become exit codes: an ``EvalrunError`` is one
line on stderr and its exit code, a usage mistake typer finds is exit 2,
Ctrl-C (or SIGTERM) 130, a closed stdout changes nothing, and anything
unexpected exits 70 with a short message and the traceback saved to a log.
"""

# No ``from __future__ import annotations``: typer reads these annotations at
# definition time, and the run commands' options depend on the tier.

import copy
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from evalrun import __version__
from evalrun.errors import ExitCode, UsageError

class _HelpWithoutType:
    """``--help`` is a flag: shown without the ``<bool>`` typer 0.29 prints for it (as every flag here, metavar "")."""

    def get_help_option(self, ctx):  # noqa: ANN001, ANN201 - click's signature
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class _Command(_HelpWithoutType, typer.core.TyperCommand):
    pass


class _Group(_HelpWithoutType, typer.core.TyperGroup):
    pass


class _Typer(typer.Typer):
    """A Typer whose commands and groups show ``--help`` as a plain flag, including commands added later."""

    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        kwargs.setdefault("cls", _Group)
        super().__init__(**kwargs)

    def command(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)


app = _Typer(
    name="evalrun",
    help="A gate for eval suites that can fail: tiered manifest, loud skips, scorer subprocesses, baseline diff.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
baseline_app = _Typer(help="Write or inspect the committed baseline of check names and assertion counts.")
app.add_typer(baseline_app, name="baseline")
replay_app = _Typer(help="The record/replay model proxy.", no_args_is_help=True)
app.add_typer(replay_app, name="replay")

def _tier(value: Optional[str]) -> Optional[str]:
    """Every TIER argument and ``--tier``: checked once, here, as it is parsed (``evalrun.plan.known_tier``)."""
    if value is None:
        return value
    from evalrun.plan import known_tier

    return known_tier(value)


def _manifest_upward(ctx: typer.Context, param: typer.CallbackParam, value: Path) -> Path:
    """No ``--manifest`` and none here: the nearest ``manifest.toml`` above (as git and pytest find their root),
    said on stderr, so a run from a subfolder uses the project's manifest and tells which."""
    source = ctx.get_parameter_source(param.name or "")
    if getattr(source, "name", None) != "DEFAULT" or value.exists():  # typer may bring a click of its own: by name
        return value
    from evalrun.manifest.load import find_manifest_upward

    found = find_manifest_upward(Path.cwd(), value.name)
    if found is None:
        return value
    _say(f"evalrun: using {found} (no {value} here; found in a folder above, as git finds its root)")
    return found


ManifestOpt = Annotated[
    Path, typer.Option("--manifest", "-m", metavar="PATH", help="Path of the manifest.", callback=_manifest_upward)
]
EvalOpt = Annotated[
    Optional[list[str]], typer.Option("--eval", "-e", metavar="NAME", help="Only this eval (repeatable).")
]
TagOpt = Annotated[
    Optional[list[str]], typer.Option("--tag", "-t", metavar="TAG", help="Only evals with this tag (repeatable).")
]
ExperimentOpt = Annotated[
    Optional[list[str]],
    typer.Option("--experiment", "-x", metavar="NAME", help="Only this experiment's column (repeatable)."),
]
JobsOpt = Annotated[
    int,
    typer.Option("--jobs", "-j", metavar="N", min=0, show_default=False, help="Scorers run at once (default: the CPU count)."),
]
JsonOpt = Annotated[
    Optional[Path],
    typer.Option("--json", metavar="PATH", help="Results file (default .evalrun/results/<tier>.json)."),
]
StrictOpt = Annotated[bool, typer.Option("--strict-baseline", metavar="", help="A stale baseline is a regression too.")]
JunitOpt = Annotated[Optional[Path], typer.Option("--junit", metavar="PATH", help="Also write JUnit XML here.")]
MarkdownOpt = Annotated[
    Optional[Path], typer.Option("--markdown", metavar="PATH", help="Also write a Markdown summary here.")
]
ChangedOpt = Annotated[
    Optional[str],
    typer.Option("--changed-since", metavar="REF", help="Only evals whose folder or paths changed since this git ref."),
]
ShardOpt = Annotated[
    Optional[str], typer.Option("--shard", metavar="I/N|auto",
                                help="Run shard I of N (e.g. 2/3), or auto: from the CI's variables; combine with merge.")
]

DEFAULT_MANIFEST = Path("manifest.toml")


_SESSION = None  # this invocation's evalrun.session.Session, made where its command's arguments are parsed


def _session(manifest_path: Optional[Path] = None):  # noqa: ANN202 - imported lazily to keep --version fast
    """The invocation's one ``Session``: the only read of ``os.environ`` a command's state comes from."""
    global _SESSION
    from evalrun import collector
    from evalrun.session import Session

    _SESSION = Session(os.environ, manifest_path)
    collector.resume()  # the start is over: the command's modules are in (evalrun.collector)
    return _SESSION


def _process_secrets() -> frozenset[str]:
    """What nothing evalrun prints may show: the session's secrets, the same set its console scrubs with.

    Before a command made its session (typer's own usage errors), one without a manifest.
    """
    return (_SESSION or _session()).secrets.values


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalrun {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", metavar="", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """evalrun: run a tier of evals and gate on the result."""


# The options of the four run commands (t1, t2, t3, run), made once for all four: only whether --tier and
# --record are shown differs (an option's Annotated type costs about 10 microseconds to make, at every start).
_TIER_OPTS = {
    hidden: Annotated[
        Optional[str], typer.Option("--tier", metavar="TIER", hidden=hidden, help="t1, t2 or t3.", callback=_tier)
    ]
    for hidden in (False, True)
}
_RECORD_OPTS = {
    hidden: Annotated[
        bool,
        typer.Option("--record", metavar="", hidden=hidden, help="t3: record the model answers as replay fixtures."),
    ]
    for hidden in (False, True)
}
NoSkipsOpt = Annotated[bool, typer.Option("--no-skips", metavar="", help="Every skip of this run is a failure.")]
CleanCheckoutOpt = Annotated[
    bool, typer.Option("--clean-checkout", metavar="", help="Run from git archive HEAD in a temporary folder.")
]
WorktreeRunOpt = Annotated[
    bool,
    typer.Option("--worktree", metavar="", help="With --clean-checkout: lay uncommitted changes of tracked files on top."),
]
HtmlRunOpt = Annotated[
    Optional[Path],
    typer.Option("--html", metavar="PATH", help="Also write the HTML report (this run and the last runs) here."),
]
RepeatRunOpt = Annotated[
    Optional[int],
    typer.Option("--repeat", metavar="N", min=1, help="Run every planned eval N times (overrides the manifest's repeat)."),
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", metavar="", help="Also print the output tail of every failing eval.")
]
LastFailedOpt = Annotated[
    bool,
    typer.Option(
        "--last-failed", "--lf", metavar="",
        help="Only the evals that failed, errored or regressed in the tier's last run (all if none did).",
    ),
]


def _run_command(fixed_tier: Optional[str], summary: str) -> None:
    """Register ``evalrun t1`` (tier fixed) or ``evalrun run --tier T``, with the options every run takes."""
    TierOpt = _TIER_OPTS[fixed_tier is not None]
    RecordOpt = _RECORD_OPTS[fixed_tier in ("t1", "t2")]

    def command(
        tier: TierOpt = fixed_tier,
        manifest_path: ManifestOpt = DEFAULT_MANIFEST,
        evals: EvalOpt = None,
        tags: TagOpt = None,
        experiments: ExperimentOpt = None,
        jobs: JobsOpt = 0,
        json_path: JsonOpt = None,
        strict_baseline: StrictOpt = False,
        no_skips: NoSkipsOpt = False,
        junit_path: JunitOpt = None,
        markdown_path: MarkdownOpt = None,
        changed_since: ChangedOpt = None,
        shard: ShardOpt = None,
        clean_checkout: CleanCheckoutOpt = False,
        worktree: WorktreeRunOpt = False,
        record: RecordOpt = False,
        html_path: HtmlRunOpt = None,
        repeat: RepeatRunOpt = None,
        verbose: VerboseOpt = False,
        last_failed: LastFailedOpt = False,
    ) -> int:
        from evalrun.commands.run import run_tier
        from evalrun.run.requests import RunRequest

        if tier is None:
            raise UsageError("run: name the tier with --tier t1|t2|t3, or use evalrun t1|t2|t3")
        if fixed_tier is not None and tier != fixed_tier:
            raise UsageError(f"evalrun {fixed_tier} --tier {tier}: the tier is {fixed_tier}; run evalrun {tier}")
        request = RunRequest(
            manifest_path=manifest_path,
            tier=tier,
            evals=list(evals or []),
            tags=list(tags or []),
            jobs=jobs,
            json_path=json_path,
            strict_baseline=strict_baseline,
            no_skips=no_skips,
            junit_path=junit_path,
            markdown_path=markdown_path,
            changed_since=changed_since,
            shard=shard,
            clean_checkout=clean_checkout,
            worktree=worktree,
            record=record,
            html_path=html_path,
            repeat=repeat,
            experiments=list(experiments or []),
            verbose=verbose,
            last_failed=last_failed,
        )
        return run_tier(request, _session(manifest_path))

    command.__doc__ = summary
    app.command(name=fixed_tier or "run")(command)


_run_command("t1", "Run tier t1 (static: no services, no database, no model key).")
_run_command("t2", "Run tier t2 (replay: local services, recorded model answers).")
_run_command("t3", "Run tier t3 (live: real model calls, within a budget).")
_run_command(None, "Run the evals of one tier.")


@app.command()
def merge(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS...", help="The shards' results files.")],
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    tier: Annotated[
        Optional[str], typer.Option("--tier", metavar="TIER", help="Default: the first file's tier.", callback=_tier)
    ] = None,
    json_path: JsonOpt = None,
    strict_baseline: StrictOpt = False,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
) -> int:
    """Combine shard results, check they cover the tier, compare the baseline (bites shards: one bites verdict), decide the exit code."""
    from evalrun.commands.merge import MergeRequest, merge_shards

    request = MergeRequest(paths=results, tier=tier, json_path=json_path, strict=strict_baseline, junit=junit,
                           markdown=markdown)
    return merge_shards(request, _session(manifest))


@app.command()
def check(manifest: ManifestOpt = DEFAULT_MANIFEST) -> int:
    """Validate the manifest and warn about absolute paths of this machine in eval sources."""
    from evalrun.commands.check import check as check_command

    return check_command(_session(manifest))


@app.command()
def dry(
    tier: Annotated[
        Optional[str], typer.Argument(metavar="[TIER]", help="t1, t2 or t3 (default: every tier).", callback=_tier)
    ] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    eval_: EvalOpt = None,
    tag: TagOpt = None,
    experiment: ExperimentOpt = None,
    no_probe: Annotated[bool, typer.Option("--no-probe", metavar="", help="Do not run the probes.")] = False,
    changed_since: ChangedOpt = None,
    shard: ShardOpt = None,
) -> int:
    """List the planned runs and whether each would run or skip, and why; run no scorer."""
    from evalrun.commands.dry import DryRequest, dry as dry_command

    request = DryRequest(manifest, tier, list(eval_ or []), list(tag or []), probe=not no_probe,
                         changed_since=changed_since, shard=shard, experiments=list(experiment or []))
    return dry_command(request, _session(manifest))


@app.command()
def bites(
    tier: Annotated[
        Optional[str], typer.Argument(metavar="[TIER]", help="t1, t2 or t3 (default: t1 and t2).", callback=_tier)
    ] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    eval_: EvalOpt = None,
    tag: TagOpt = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", metavar="N", min=0, show_default=False, help="Bites run at once (default: up to 4).")
    ] = 0,
    shard: ShardOpt = None,
    worktree: Annotated[
        bool, typer.Option("--worktree", metavar="", help="Lay uncommitted changes of tracked files on each clean copy.")
    ] = False,
    json_path: Annotated[
        Optional[Path], typer.Option("--json", metavar="PATH", help="Results file (default .evalrun/results/bites-<tier>.json).")
    ] = None,
    junit_path: JunitOpt = None,
    markdown_path: MarkdownOpt = None,
    html_path: Annotated[Optional[Path], typer.Option("--html", metavar="PATH", help="Also write an HTML report of the bites here.")] = None,
) -> int:
    """Break what each eval guards (its declared bites), each in a clean copy, and check the named checks go red."""
    from evalrun.bites.run import BitesRequest
    from evalrun.commands.bites import bites as bites_command

    request = BitesRequest(
        manifest_path=manifest, tier=tier, evals=list(eval_ or []), tags=list(tag or []), jobs=jobs, shard=shard,
        worktree=worktree, json_path=json_path, junit_path=junit_path, markdown_path=markdown_path, html_path=html_path,
    )
    return bites_command(request, _session(manifest))


@app.command()
def schema(name: Annotated[str, typer.Argument(metavar="NAME", help="report, manifest or results.")]) -> int:
    """Print a published JSON Schema."""
    from evalrun.commands.schema import schema as schema_command

    return schema_command(name)


@app.command("setup-file")
def setup_file(runner: Annotated[str, typer.Argument(metavar="RUNNER", help="vitest or jest.")]) -> int:
    """Print the path of evalrun's setup file that records assertion counts for vitest or jest."""
    from evalrun.commands.setup_file import setup_file as setup_file_command

    return setup_file_command(runner)


BASELINE_WANTS = ("baseline: name the tier to record: evalrun baseline --update t1 (t1, t2 or t3), "
                  "--update --all for every tier, or evalrun baseline diff TIER to compare without running")


@baseline_app.callback(invoke_without_command=True)
def baseline(
    ctx: typer.Context,
    update: Annotated[
        Optional[str], typer.Option("--update", metavar="TIER", help="Run TIER and write baselines/TIER.toml.")
    ] = None,
    all_tiers: Annotated[bool, typer.Option("--all", metavar="", help="With --update: every tier of the manifest.")] = False,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    eval_: EvalOpt = None,
    tag: TagOpt = None,
    experiment: ExperimentOpt = None,
    jobs: JobsOpt = 0,
    from_results: Annotated[
        Optional[Path],
        typer.Option("--from-results", metavar="PATH", help="Write from this results file instead of running."),
    ] = None,
    repeat: Annotated[
        Optional[int],
        typer.Option("--repeat", metavar="N", min=1, help="Run every planned eval N times and record its pass rates."),
    ] = None,
) -> Optional[int]:
    """Write or inspect the committed baseline."""
    if ctx.invoked_subcommand is not None:
        return None
    if update == "--all":  # `--update --all`, as documented: --update read "--all" as its tier
        update, all_tiers = None, True
    elif update is not None and update.startswith("-"):
        raise UsageError(f"--update {update}: name a tier (t1, t2, t3) or pass --all")
    if update is None and not all_tiers:
        raise UsageError(BASELINE_WANTS)
    from evalrun.commands.baseline import UpdateRequest, update_baselines

    request = UpdateRequest(
        tiers=[update] if update else [],
        all_tiers=all_tiers,
        evals=list(eval_ or []),
        tags=list(tag or []),
        jobs=jobs,
        from_results=from_results,
        experiments=list(experiment or []),
        repeat=repeat,
    )
    return update_baselines(request, _session(manifest))


@baseline_app.command("diff")
def baseline_diff(
    tier: Annotated[str, typer.Argument(metavar="TIER", help="t1, t2 or t3.", callback=_tier)],
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    from_results: Annotated[
        Optional[Path],
        typer.Option("--from-results", metavar="PATH", help="Results file (default .evalrun/results/<tier>.json)."),
    ] = None,
    strict_baseline: StrictOpt = False,
) -> int:
    """Compare the last results with the baseline without running scorers."""
    from evalrun.commands.baseline import DiffRequest, diff_baseline

    return diff_baseline(DiffRequest(tier=tier, from_results=from_results, strict=strict_baseline), _session(manifest))


@baseline_app.command("update", hidden=True, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def baseline_update_misspelt(ctx: typer.Context) -> int:
    """``evalrun baseline update t1``: the natural guess, answered with the form that works."""
    tier = next((a for a in ctx.args if not a.startswith("-")), "TIER")
    raise UsageError(f"baseline update: --update is an option; run evalrun baseline --update {tier}")


@replay_app.command("serve")
def replay_serve(
    fixtures: Annotated[
        Path, typer.Option("--fixtures", metavar="DIR", help="Folder of fixtures/<session>/<index>.json.")
    ],
    mode: Annotated[str, typer.Option("--mode", metavar="MODE", help="replay, record or live.")] = "replay",
    upstream: Annotated[
        Optional[str], typer.Option("--upstream", metavar="URL", help="The provider's base URL (record, live).")
    ] = None,
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", show_default=False, help="Port on 127.0.0.1 (default: any free one).")
    ] = 0,
    eval_name: Annotated[
        str, typer.Option("--eval", metavar="NAME", help="Session name when no X-Evalrun-Session is sent.")
    ] = "serve",
) -> int:
    """Run the proxy in the foreground until Ctrl-C."""
    from evalrun.commands.replay import ServeRequest, serve

    return serve(ServeRequest(fixtures, mode, upstream, port, eval_name), _session())

@app.command()
def history(
    words: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="[TIER] | import RESULTS...", help="[TIER], or: import RESULTS... (load results files)."),
    ] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    eval_: Annotated[Optional[str], typer.Option("--eval", "-e", metavar="NAME", help="Per check of this eval.")] = None,
    check_: Annotated[
        Optional[str], typer.Option("--check", "-c", metavar="CHECK", help="Per run for checks of this name.")
    ] = None,
    last: Annotated[int, typer.Option("--last", metavar="N", help="How many recent runs.", min=1)] = 20,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="Print JSON for machines.")] = False,
    shards: Annotated[
        bool, typer.Option("--shards", metavar="", help="Also the runs of single shards (merged runs hold them).")
    ] = False,
) -> int:
    """Show past runs, or each check's status per run and since when it fails; `history import` loads results files."""
    from evalrun.commands.history import HistoryRequest, ImportRequest, import_results, show_history

    words = list(words or [])
    if words[:1] == ["import"]:
        return import_results(ImportRequest(paths=[Path(w) for w in words[1:]]), _session(manifest))
    if len(words) > 1:
        raise UsageError(f"history: expected at most one TIER, got {' '.join(words)}")
    request = HistoryRequest(tier=_tier(words[0] if words else None), eval_name=eval_, check=check_, last=last,
                             as_json=as_json, shards=shards)
    return show_history(request, _session(manifest))


@app.command()
def show(
    name: Annotated[str, typer.Argument(metavar="EVAL", help="An eval, or one of its cells: eval[experiment].")],
    tier: Annotated[Optional[str], typer.Argument(metavar="[TIER]", help="Default: the eval's tier.", callback=_tier)] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    json_path: JsonOpt = None,
) -> int:
    """Show one eval of the tier's last run: its verdict, failed checks and every model call in order."""
    from evalrun.commands.show import ShowRequest, show_eval

    return show_eval(ShowRequest(name=name, tier=tier, json_path=json_path), _session(manifest))


@app.command()
def report(
    tier: Annotated[
        Optional[str],
        typer.Argument(metavar="[TIER]", help="t1, t2 or t3 (default: the tier of the latest run).", callback=_tier),
    ] = None,
    html: Annotated[
        Optional[Path], typer.Option("--html", metavar="PATH", help="Write the self-contained HTML report here.")
    ] = None,
    manifest: ManifestOpt = DEFAULT_MANIFEST,
    last: Annotated[
        int, typer.Option("--last", metavar="N", help="How many recent runs the trends show.", min=1)
    ] = 30,
) -> int:
    """Write a report of the latest run and the trends of the last runs."""
    from evalrun.commands.report import ReportRequest, write_report

    return write_report(ReportRequest(html=html, tier=tier, last=last), _session(manifest))


@app.command()
def init(
    folder: Annotated[Path, typer.Argument(metavar="[FOLDER]", help="Where to start (default: here).")] = Path("."),
    model: Annotated[
        bool,
        typer.Option("--model", metavar="", help="Also a t2/t3 eval pair calling a model through the openai SDK."),
    ] = False,
) -> int:
    """Start a project: a commented manifest, one passing t1 eval, baselines/, and .gitignore for .evalrun/."""
    from evalrun.commands.init import InitRequest, init_project

    return init_project(InitRequest(folder=folder, model=model), _session())


def main(argv: Optional[list[str]] = None) -> int:
    """The one error boundary: every way out of evalrun passes here."""
    from evalrun.errors import EvalrunError

    global _SESSION
    _SESSION = None  # each call is an invocation of its own (tests call main in one process)
    try:
        if (sys.argv[1:] if argv is None else argv) == ["--version"]:
            # Answered before typer builds every command's parser: --version costs little more than importing typer.
            typer.echo(f"evalrun {__version__}")
            code = 0
        else:
            code = _app_for(sys.argv[1:] if argv is None else argv)(args=argv, prog_name="evalrun", standalone_mode=False)
    except EvalrunError as exc:
        _say(_redacted(f"evalrun: error: {exc}"))
        code = int(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        _say("evalrun: interrupted")
        code = int(ExitCode.INTERRUPTED)
    except Exception as exc:
        if getattr(exc, "option_name", None) == "--update":  # `evalrun baseline --update` with no tier
            _say(f"evalrun: error: {BASELINE_WANTS}")
            code = int(ExitCode.USAGE)
        elif _is_usage_exception(exc):  # bad arguments, found by typer: its own message, exit 2
            _say_usage(exc)
            code = int(exc.exit_code)  # type: ignore[attr-defined]
        else:  # the one place an unexpected error is caught
            log = _write_crash_log()
            _say(_redacted(f"evalrun: internal error: {type(exc).__name__}: {exc} (traceback in {log})"))
            code = 70
    return _closed_stdout(code if isinstance(code, int) else 0)


def _app_for(args: list[str]) -> typer.Typer:
    """The app typer runs for ``args``: where the first word names one of its commands, the app with that command only.

    Typer builds the parser of every registered command (its options, their types) before it parses a word:
    for ``evalrun t1`` that was 17 commands and about 6 ms of CPU, a tenth of evalrun's own start. The command
    named is the same command, under the same group and callback, so its parsing, help and errors are unchanged;
    anything else (no word, an option first, a group such as ``baseline``, a misspelt command) gets the whole app.
    """
    if not args:
        return app
    wanted = [c for c in app.registered_commands
              if (c.name or typer.main.get_command_name(getattr(c.callback, "__name__", ""))) == args[0]]
    if len(wanted) != 1:
        return app
    view = copy.copy(app)
    view.registered_commands = wanted
    view.registered_groups = []
    return view


def _is_usage_exception(exc: Exception) -> bool:
    """Typer's (click's) own argument errors: they know how to show themselves and their exit code."""
    return callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int)


def _redacted(text: str) -> str:
    """``text`` without the environment's key values, secret-looking values or URL passwords: it leaves evalrun."""
    from evalrun.secrets import redact_passwords, scrub

    return scrub(redact_passwords(text), _process_secrets())


def _say(line: str) -> None:
    """An error line on stderr (GitHub reads workflow commands there too): redacted by the caller, then neutralised."""
    from evalrun.text import neutralise

    try:
        print(neutralise(line), file=sys.stderr, flush=True)
    except OSError:
        pass


def _say_usage(exc: Exception) -> None:
    """Typer's usage text (usage line, hint, ``Error: ...``), the arguments it echoes redacted and made inert.

    Typer escapes some controls in some messages, by version; here every line is neutralised as evalrun's own:
    no ESC, no CR or U+2028 inside a line, no line that starts a workflow command.
    """
    import io
    import re

    from evalrun.text import neutralise

    shown = io.StringIO()
    exc.show(file=shown)  # type: ignore[attr-defined]
    text = shown.getvalue()
    # The head (usage, hint) keeps its lines; the error, from the first line that starts "Error: " (the usage
    # names only commands), stays one line whatever line breaks the arguments it echoes hold.
    found = re.search(r"^Error: ", text, re.MULTILINE)
    head, error = (text[: found.start()], text[found.start() :].rstrip("\n")) if found else (text, "")
    out = neutralise(_redacted(head), lines=True) + (neutralise(_redacted(error)) + "\n" if error else "")
    try:
        sys.stderr.write(out)
        sys.stderr.flush()
    except OSError:
        pass


def _closed_stdout(code: Optional[int]) -> int:
    """A reader that went away (``evalrun t1 | head -1``) must not change the verdict."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        # Point stdout at /dev/null so the interpreter's own flush at exit stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return int(ExitCode.OK if code is None else code)


def _write_crash_log() -> str:
    import tempfile
    import traceback

    fd, path = tempfile.mkstemp(prefix="evalrun-crash-", suffix=".log")
    with open(fd, "w", encoding="utf-8") as fh:
        fh.write(_redacted(traceback.format_exc()))
    return path
