"""``manifest.toml``: its shape (``schema``), reading it (``load``), and the rules across its fields (``rules``).

This is the package's public face: ``from evalrun.manifest import X`` works for
every name that was importable before the package was split.
"""

from evalrun.manifest.load import MANIFEST_LIMIT, load_manifest
from evalrun.manifest.rules import EXPERIMENT_NAME, check_rules
from evalrun.manifest.schema import (
    DEFAULT_TIMEOUT,
    HISTORY_SCHEMES,
    TIERS,
    AnchorFloors,
    BaselineConfig,
    Bite,
    Budget,
    EnvTable,
    EvalSpec,
    Experiment,
    ExperimentList,
    HistoryConfig,
    Manifest,
    ManifestKeys,
    ModelsConfig,
    Price,
    SkipRule,
    TierConfig,
    _RawManifest,
    manifest_schema,
    upstream_problem,
)

__all__ = [
    "DEFAULT_TIMEOUT", "EXPERIMENT_NAME", "HISTORY_SCHEMES", "MANIFEST_LIMIT", "TIERS", "AnchorFloors", "BaselineConfig",
    "Bite", "Budget", "EnvTable", "EvalSpec", "Experiment", "ExperimentList", "HistoryConfig", "Manifest", "ManifestKeys",
    "ModelsConfig", "Price", "SkipRule", "TierConfig", "_RawManifest", "check_rules", "load_manifest", "manifest_schema",
    "upstream_problem",
]
