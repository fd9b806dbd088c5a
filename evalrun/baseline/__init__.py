"""The baseline gate, ``baselines/<tier>.toml``, by concern.

``format`` (the file's written form, both ways: the text written and that text
read back, held equal to tomllib), ``store`` (where it lives, its lock and
fingerprint), ``read`` (loading a file: bounded, tomllib for hand edits, every
table checked into records, errors naming file, place and fix), ``write``
(atomically), ``compare`` (a run against it), ``update`` (what ``baseline
--update`` records); ``rates``, ``settings`` and ``judges`` hold the rules of
the pass rates, gate settings and judges it records: what a run records, what
counts as a change. The comparison's wording is ``evalrun.reports_out.baseline_text``.

This is the package's public face: ``from evalrun.baseline import X`` works for
the names importable before the package was split (``format_comparison``
moved to ``evalrun.reports_out.baseline_text``: a domain package imports no output).
"""

from evalrun.baseline.compare import compare_tier, compare_to_baseline, failed_before_scorer
from evalrun.baseline.format import read_whole_written_form as _read_whole_written_form
from evalrun.baseline.format import read_written_form as _read_written_form
from evalrun.baseline.judges import updated_judges
from evalrun.baseline.rates import RatedCount
from evalrun.baseline.read import Baseline, load_baseline
from evalrun.baseline.settings import GateSettings, gate_settings, updated_settings
from evalrun.baseline.store import (
    BASELINE_LIMIT,
    baseline_fingerprint,
    baseline_lock,
    baseline_path,
    check_unchanged_since,
    mark_written,
    update_command,
)

__all__ = [
    "BASELINE_LIMIT", "Baseline", "GateSettings", "RatedCount", "_read_whole_written_form", "_read_written_form",
    "baseline_fingerprint", "baseline_lock", "baseline_path", "check_unchanged_since", "compare_tier",
    "compare_to_baseline", "failed_before_scorer", "gate_settings", "load_baseline", "mark_written", "update_baseline",
    "update_command", "updated_judges", "updated_settings", "write_baseline",
]


def __getattr__(name: str) -> object:
    """``update_baseline`` and ``write_baseline``: loaded on first use, by ``baseline --update`` (a run never writes
    its baseline, and so never loads them)."""
    if name == "update_baseline":
        from evalrun.baseline.update import update_baseline

        return update_baseline
    if name == "write_baseline":
        from evalrun.baseline.write import write_baseline

        return write_baseline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
