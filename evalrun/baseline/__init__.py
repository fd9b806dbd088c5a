"""The baseline gate, ``baselines/<tier>.toml``, by concern.

``store`` (where it lives, its lock and fingerprint), ``read`` (the fast
readers, held equal to tomllib), ``compare`` (a run against it), ``update``
(what ``baseline --update`` records), ``write``; ``rates``, ``settings`` and
``judges`` hold the pass rates, gate settings and judges it records. The
comparison's wording is ``evalrun.reports_out.baseline_text``.

This is the package's public face: ``from evalrun.baseline import X`` works for
the names importable before the package was split (``format_comparison``
moved to ``evalrun.reports_out.baseline_text``: a domain package imports no output).
"""

from evalrun.baseline.compare import compare_tier, compare_to_baseline, failed_before_scorer
from evalrun.baseline.judges import updated_judges
from evalrun.baseline.rates import RatedCount
from evalrun.baseline.read import Baseline, _read_whole_written_form, _read_written_form, load_baseline
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
from evalrun.baseline.update import update_baseline
from evalrun.baseline.write import write_baseline

__all__ = [
    "BASELINE_LIMIT", "Baseline", "GateSettings", "RatedCount", "_read_whole_written_form", "_read_written_form",
    "baseline_fingerprint", "baseline_lock", "baseline_path", "check_unchanged_since", "compare_tier",
    "compare_to_baseline", "failed_before_scorer", "gate_settings", "load_baseline", "mark_written", "update_baseline",
    "update_command", "updated_judges", "updated_settings", "write_baseline",
]
