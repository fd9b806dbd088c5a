"""GitHub Actions output: workflow-command annotations and the job summary.

Annotations put each problem on the pull request where it belongs: an
``::error`` for every failed, errored or timed-out eval and every baseline
regression, a ``::warning`` for every eval that was not checked and one for a
stale baseline. They point at the eval's folder (``file=``), or at the
baseline file when the eval itself is gone. Scorer text is neutralised
(``evalrun.text.neutralise``: controls shown, no line that starts a command),
then escaped per GitHub's workflow-command rules (``%``, CR and LF in the
message; also ``:`` and ``,`` in properties), so it can neither break the
command nor start a new one.

``append_github_step_summary`` appends the Markdown summary to the file named
by ``$GITHUB_STEP_SUMMARY``; GitHub collects it when the step ends. A file it
cannot append to raises ``ReportError`` (one line): the caller reports it
without changing the verdict, since a summary is not part of the gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalrun.errors import ReportError
from evalrun.reports_out.describe import describe_failure, describe_unchecked, network_line, update_hint
from evalrun.reports_out.markdown import render_markdown
from evalrun.results import RunResults, Status
from evalrun.text import neutralise, plural


def github_annotations(results: RunResults) -> list[str]:
    """The workflow commands for ``results``, errors first, one per line."""
    errors: list[str] = []
    warnings: list[str] = []
    dirs = {result.name: result.dir for result in results.evals}
    for result in results.evals:
        if result.status.is_failure:
            errors.append(_command("error", result.dir, f"evalrun {result.name}", describe_failure(result)))
        elif result.status.is_unchecked:
            text = f"{describe_unchecked(result)} (not checked: a skip is never a pass)"
            warnings.append(_command("warning", result.dir, f"evalrun {result.name}", text))
        if result.status is Status.PASSED and result.repeats is not None and result.repeats.flaky:
            text = f"flaky (passed the floor, not every run): {result.message}"
            warnings.append(_command("warning", result.dir, f"evalrun {result.name}", text))
    if results.network is not None and not results.network.isolated:
        manifest = results.manifest.rsplit("/", 1)[-1] or "manifest.toml"
        title = f"evalrun {results.tier} not isolated from the network"
        warnings.append(_command("warning", manifest, title, network_line(results.network)))
    baseline = results.baseline
    if baseline is not None:
        for change in baseline.regressions:
            where = dirs.get(change.eval, baseline.path)
            text = f"baseline regression: {change.message}"
            errors.append(_command("error", where, f"evalrun {change.eval}", text))
        if baseline.stale:
            text = (
                f"{plural(len(baseline.stale), 'change')} not in the baseline yet "
                f"(first: {baseline.stale[0].message}); run `{update_hint(results)}` and commit {baseline.path}"
            )
            warnings.append(_command("warning", baseline.path, "evalrun baseline is stale", text))
    return errors + warnings


def append_github_step_summary(results: RunResults, env: Mapping[str, str]) -> Path | None:
    """Append the Markdown summary to ``$GITHUB_STEP_SUMMARY``; the path written, or None when unset."""
    target = env.get("GITHUB_STEP_SUMMARY", "").strip()
    if not target:
        return None
    path = Path(target)
    try:
        # Appending, not replacing: earlier steps' summaries live in the same file.
        with path.open("a", encoding="utf-8") as handle:
            handle.write(render_markdown(results))
    except OSError as exc:
        raise ReportError(
            f"$GITHUB_STEP_SUMMARY {target}: cannot append the summary ({exc.strerror}); "
            f"run inside a GitHub Actions step or unset the variable"
        ) from None
    return path


def _command(level: str, file: str, title: str, message: str) -> str:
    # The message may hold lines (GitHub shows them in the annotation); properties are one line each.
    props = f"title={_escape_property(neutralise(title))}"
    if file:
        props = f"file={_escape_property(neutralise(file))},{props}"
    return f"::{level} {props}::{_escape_data(neutralise(message, lines=True))}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
