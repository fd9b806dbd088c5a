"""The HTML report: one self-contained file of the latest run and the trends of the last runs.

This module owns turning history records into that page. Jinja2 renders it
with autoescaping on, because check names, messages, evidence and metric names
come from scorers and are untrusted; every value is neutralised first
(``evalrun.text.neutralise``), so no control character reaches the page.
Charts are small hand-written inline SVG
(a few path and polyline elements computed here): no chart library, no script
needed to draw them, nothing fetched when the file is opened (the page's
Content-Security-Policy forbids every network source).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrun.atomic import write_atomic
from evalrun.history.records import GitInfo, StoredRun
from evalrun.history.series import ABSENT, FAILED, CheckSeries, check_series, last_failure, ordered_for_attention
from evalrun.text import neutralise, plural

if TYPE_CHECKING:
    from evalrun.history.location import HistoryLocation
    from evalrun.reports_out.terminal import Console
    from evalrun.manifest import Manifest
    from evalrun.results import RunResults

TEMPLATES = Path(__file__).resolve().parent / "templates"
CHART_W, CHART_H, PAD, LEFT = 560, 110, 6, 52  # LEFT: room for the axis labels
CELL, GAP, STRIP_H = 6, 2, 14
MAX_DOTS = 40  # above this a chart is a bare line: per-point markers would bloat a 100-run report


@dataclass
class Chart:
    key: str
    title: str
    values: list[float | None]
    runs: list[str]
    unit: str = ""
    segments: list[str] = field(default_factory=list)
    dots: list[tuple[float, float, str]] = field(default_factory=list)
    low: str = ""
    high: str = ""
    latest: str = ""

    @property
    def data_values(self) -> str:
        return ",".join("" if v is None else _num(v) for v in self.values)


@dataclass
class Strip:
    passed: str
    failed: str
    absent: str
    width: int


def make_chart(key: str, title: str, values: list[float | None], runs: list[str], unit: str = "",
               floor: float | None = None, ceiling: float | None = None) -> Chart:
    """Geometry of a line chart over runs; a run without a value breaks the line."""
    chart = Chart(key, title, values, runs, unit)
    known = [v for v in values if v is not None and math.isfinite(v)]
    if not known:
        return chart
    low = min(known) if floor is None else floor
    high = max(known) if ceiling is None else ceiling
    span = (high - low) or 1.0
    step = (CHART_W - LEFT - PAD) / max(1, len(values) - 1)
    current: list[str] = []
    for i, v in enumerate(values):
        if v is None or not math.isfinite(v):
            if current:
                chart.segments.append(" ".join(current))
            current = []
            continue
        x = LEFT + i * step if len(values) > 1 else (LEFT + CHART_W) / 2
        y = CHART_H - PAD - (v - low) / span * (CHART_H - 2 * PAD)
        current.append(f"{x:.1f},{y:.1f}")
        if len(values) <= MAX_DOTS:
            chart.dots.append((round(x, 1), round(y, 1), f"{runs[i]}: {_num(v)}{unit}"))
    if current:
        chart.segments.append(" ".join(current))
    chart.low, chart.high = f"{_num(low)}{unit}", f"{_num(high)}{unit}"
    chart.latest = f"{_num(known[-1])}{unit}"
    return chart


def make_strip(series: CheckSeries) -> Strip:
    """One cell per run, drawn as one path per status so 100 runs cost three elements, not 100."""
    paths: dict[str, list[str]] = {"passed": [], "failed": [], "absent": []}
    for i, point in enumerate(series.points):
        status = "absent" if point.status == ABSENT else ("failed" if point.status == FAILED else "passed")
        paths[status].append(f"M{i * (CELL + GAP)} 0h{CELL}v{STRIP_H}h-{CELL}z")
    return Strip("".join(paths["passed"]), "".join(paths["failed"]), "".join(paths["absent"]),
                 max(1, len(series.points) * (CELL + GAP)))


def trend_charts(runs: list[StoredRun]) -> list[Chart]:
    """Pass rate, assertions, duration and tokens per run, then every numeric metric of every eval."""
    ids = [r.run_id for r in runs]

    def pass_rate(run: StoredRun) -> float | None:
        checks = [c for e in run.evals for c in e.checks]
        return sum(c.passed for c in checks) / len(checks) * 100 if checks else None

    def tokens(run: StoredRun) -> float | None:
        found = [e.tokens for e in run.evals if e.tokens is not None]
        return float(sum(found)) if found else None

    charts = [
        make_chart("pass-rate", "checks passed (% of checks run)", [pass_rate(r) for r in runs], ids, "%", 0, 100),
        make_chart("assertions", "assertions counted", [float(sum(c.assertions for e in r.evals for c in e.checks))
                                                        for r in runs], ids, "", 0),
        make_chart("duration", "duration (sum of evals, s)", [sum(e.duration_s for e in r.evals) for r in runs],
                   ids, " s", 0),
    ]
    # A run can fail with every check that ran passing (an eval errored, timed out or failed a runner rule
    # before any check): its "100%" must not read as the run's verdict beside "failed".
    silent = [e.name for e in runs[-1].evals if e.failed and all(c.passed for c in e.checks)] if runs else []
    if silent and charts[0].latest:
        charts[0].latest += (f" of the checks that ran; {plural(len(silent), 'eval')} failed without a failing check "
                             f"({', '.join(silent[:3])}{', ...' if len(silent) > 3 else ''})")
    if any(tokens(r) is not None for r in runs):
        charts.append(make_chart("tokens", "model tokens", [tokens(r) for r in runs], ids, "", 0))
    metric_keys: dict[tuple[str, str], None] = {}
    for run in runs:
        for e in run.evals:
            for name, value in e.metrics.items():
                if _numeric(value):
                    metric_keys.setdefault((e.name, name), None)
    metrics_by_run = [{e.name: e.metrics for e in run.evals} for run in runs]
    for eval_name, name in sorted(metric_keys):
        values = []
        for metrics in metrics_by_run:
            found = metrics.get(eval_name, {}).get(name)
            values.append(float(found) if _numeric(found) else None)
        charts.append(make_chart(f"metric:{eval_name}:{name}", f"{eval_name}: {name}", values, ids))
    return charts


PAGE_CALL_CHARS = 1_000_000  # characters of model-call text on one page; the rest: evalrun show EVAL
# The page's bound, whatever the history holds: check rows in the trend table and in the latest run
# (failing and flipping ones first), and the characters of a check name shown (the rest: the results file).
PAGE_CHECK_ROWS = 2_000
NAME_SHOWN = 200
FOLD_CHARS = 300  # a longer text is folded (<details>), its first line showing


@dataclass
class CallsView:
    """An eval's model calls as the page shows them, and where each check's calls start."""

    anchor: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    left_out: int = 0  # calls not on the page (its size bound, or never kept)
    check_links: dict[str, str] = field(default_factory=dict)  # check name -> anchor of its first call


def call_views(evals: list[Any], budget: int = PAGE_CALL_CHARS) -> dict[str, CallsView]:
    """Every eval's model calls in order, bounded to ``budget`` characters of text on the whole page."""
    from evalrun.reports_out.transcript import call_headline

    views: dict[str, CallsView] = {}
    used = 0
    for i, e in enumerate(evals):
        log = (e.models or {}).get("call_log") if isinstance(e.models, dict) else None
        if not log:
            continue
        view = CallsView(anchor=f"calls-{i}", left_out=int((e.models or {}).get("calls_not_kept") or 0))
        for call in log:
            if not isinstance(call, dict):
                continue
            size = len(str(call))
            if used + size > budget:
                view.left_out += 1
                continue
            used += size
            anchor = f"call-{i}-{call.get('n', len(view.calls) + 1)}"
            view.calls.append({**call, "anchor": anchor, "headline": call_headline(call)})
        sessions = [(str(c.get("session") or ""), c["anchor"]) for c in view.calls]
        for check in e.checks:
            found = next((a for s, a in sessions if s and (check.name.startswith(f"{s}:") or f"[{s}]" in check.name)), None)
            view.check_links[check.name] = found or view.anchor
        views[e.name] = view
    return views


def render_report(runs: list[StoredRun], notes: list[str] | None = None) -> str:
    """The page for ``runs`` (oldest first; the last is the latest run)."""
    from evalrun.errors import ExitCode
    from evalrun.reports_out.describe import VERDICT_WORDS, stored_network_line

    if not runs:
        raise ValueError("a report needs at least one run")
    latest = runs[-1]
    # A run filtered with -e/-t/... saw part of the tier: its totals would read as a drop in the trends.
    whole = [r for r in runs if not r.filters]
    partial = [r for r in runs if r.filters]
    notes = list(notes or [])
    if partial:
        notes.append(f"{len(partial)} of the {len(runs)} runs {'was' if len(partial) == 1 else 'were'} filtered "
                     f"({', '.join(sorted({f for r in partial for f in r.filters})[:5])}): left out of the trends")
    series = ordered_for_attention(check_series(runs))
    if len(series) > PAGE_CHECK_ROWS:
        notes.append(f"{len(series):,} checks in these runs: the {PAGE_CHECK_ROWS:,} that need attention first are shown "
                     f"(failing and flipping ones first); every check is in evalrun history --check and the results files")
        series = series[:PAGE_CHECK_ROWS]
    rows = [{"s": s, "strip": make_strip(s), "since": last_failure(s)} for s in series]
    shown_checks, hidden_checks = _latest_checks(latest.evals, PAGE_CHECK_ROWS)
    code = latest.exit_code
    try:
        words = VERDICT_WORDS.get(ExitCode(code), "") if code is not None else "no exit code recorded"
    except ValueError:
        words = ""
    return _template().render(
        latest=latest, network_line=stored_network_line(latest.network), runs=runs, verdict=words, rows=rows, attention=[r for r in rows if r["s"].newly_failing
                                                                       or r["s"].flaky or r["s"].failing],
        charts=trend_charts(whole), trend_runs=len(whole), strip_h=STRIP_H, chart_w=CHART_W, chart_h=CHART_H, left=LEFT,
        notes=notes, cell=CELL, calls=call_views(latest.evals), fold=FOLD_CHARS,
        unchecked=[e for e in latest.evals if e.unchecked], shown_checks=shown_checks, hidden_checks=hidden_checks,
    )


def models_line(models: dict[str, Any], tokens: int | None, logged: int) -> str:
    """An eval's models line: who answered, the calls answered, and the calls made that got no answer (the page
    lists every call made; "unknown provider, 0 calls" above "1 model call" contradicted it)."""
    by_provider = models.get("by_provider") or {}
    answered = int(models.get("calls") or 0)
    if by_provider:
        who = ", ".join(f"{p} {m}" for p, names in by_provider.items() for m in names) or ", ".join(by_provider)
    elif models.get("provider"):
        who = f"{models['provider']} {', '.join(models.get('models') or [])}".strip()
    else:
        who = "no provider answered" if not answered else "unknown provider"
    calls = plural(answered, "call") + " answered"
    if logged > answered:
        calls += f" of {logged} made"
    return f"{who}, {calls}, {tokens or 0} tokens ({models.get('mode') or ''})"


def _latest_checks(evals: list[Any], budget: int) -> tuple[dict[str, list[Any]], dict[str, int]]:
    """Each eval's checks the page lists (failed ones first, ``budget`` on the whole page), and how many it leaves out."""
    shown: dict[str, list[Any]] = {}
    hidden: dict[str, int] = {}
    for e in evals:
        ordered = sorted(e.checks, key=lambda c: c.passed)  # stable: failed first, in report order
        shown[e.name] = ordered[:budget]
        hidden[e.name] = len(ordered) - len(shown[e.name])
        budget = max(0, budget - len(shown[e.name]))
    return shown, hidden


def short_name(text: Any) -> str:
    """A check or eval name as the page shows it: cut at ``NAME_SHOWN`` characters, saying so."""
    text = str(text)
    return text if len(text) <= NAME_SHOWN else text[: NAME_SHOWN - 1] + "…"


@functools.cache
def _template() -> Any:
    """The compiled template, once per process (compiling it costs more than rendering a small report)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, finalize=_neutralised,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = short_name
    env.filters["plural"] = plural
    env.globals["models_line"] = models_line
    return env.get_template("report.html")


def _neutralised(value: Any) -> Any:
    """Every ``{{ }}`` of the page, before autoescaping: text neutralised (lines kept), the page's own markup not."""
    if isinstance(value, str):
        return value if hasattr(value, "__html__") else neutralise(value, lines=True)  # Markup: a macro's output
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return neutralise(str(value), lines=True)


def write_html_report(path: Path, runs: list[StoredRun], notes: list[str] | None = None) -> None:
    write_atomic(path, render_report(runs, notes))
    path.chmod(0o644)  # a page to share (a CI artifact, a web folder), not a private temp file


def runs_for_report(
    manifest: Manifest, tier: str | None, last: int, environ: Mapping[str, str], latest: RunResults | None = None,
    *, strict: bool = False, unusable: str | None = None, secrets: Iterable[str] = (),
    locate: Callable[[], HistoryLocation | None] | None = None,
) -> tuple[list[StoredRun], list[str]]:
    """The last runs from the history (of ``tier``); with no history, only ``latest``. Second: warnings.

    ``environ`` says where the history is; ``secrets`` (the run's) are scrubbed from ``latest`` as the history would.
    ``strict`` (``evalrun report``): a history that cannot be read raises its one-line error instead of a note.
    ``unusable``: the run could not record into the history just now (that warning); it is not waited for again.
    """
    from evalrun.errors import EvalrunError
    from evalrun.history.location import locate_history
    from evalrun.history.records import make_record, run_id_for
    from evalrun.history.backends import use_store

    runs: list[StoredRun] = []
    notes: list[str] = []
    try:
        location = locate() if locate is not None else locate_history(manifest, environ)
        if location is None:
            notes.append("history is off ([history] enabled = false): this report shows the latest run only")
        elif unusable is not None:
            notes.append(f"history not read: {unusable.removeprefix('history: ')}")
        else:
            runs = use_store(location, lambda store: store.runs(tier, last))
    except EvalrunError as exc:
        if strict:
            raise
        notes.append(f"history not read: {exc}")
    if latest is not None and not any(r.run_id == run_id_for(latest) for r in runs):
        runs = [*runs, make_record(latest, GitInfo(), "run", set(secrets))][-last:]
    return runs, notes


def write_html_after_run(
    manifest: Manifest, results: RunResults, path: Path, environ: Mapping[str, str], console: Console,
    history_warning: str | None = None, *, secrets: Iterable[str] = (),
    locate: Callable[[], HistoryLocation | None] | None = None,
) -> str | None:
    """``--html`` on a run command: the report of this run and the history's last runs; a warning on failure.

    ``history_warning``: recording this run failed with it; the page says so, and the store is not tried again.
    """
    try:
        runs, notes = runs_for_report(manifest, results.tier, 30, environ, results, unusable=history_warning,
                                      secrets=secrets, locate=locate)
        write_html_report(path, runs, notes)
    except OSError as exc:
        return f"html report not written: {path}: {exc.strerror or exc}"
    console.line(f"html: {path}")
    return None


def _numeric(value: Any) -> bool:
    """A number a chart can draw: an int past a float's range (a valid JSON metric, 10**400) is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
