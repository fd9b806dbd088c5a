"""The baseline gate, ``baselines/<tier>.toml``: reading, comparing, updating, writing (see the modules).

This is the package's public face: ``from evalrun.baseline import X`` keeps
working for every name that was importable before the package was split.
"""

from evalrun.baseline.compare import (
    BASELINE_LIMIT,
    Baseline,
    _read_whole_written_form,
    _read_written_form,
    baseline_fingerprint,
    baseline_lock,
    baseline_path,
    check_unchanged_since,
    compare_tier,
    compare_to_baseline,
    failed_before_scorer,
    format_comparison,
    load_baseline,
    mark_written,
    update_baseline,
    update_command,
    write_baseline,
)
