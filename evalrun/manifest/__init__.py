"""``manifest.toml``: its shape, loading it, and the rules across its fields (see the modules).

This is the package's public face: ``from evalrun.manifest import X`` keeps
working for every name that was importable before the package was split.
"""

from evalrun.manifest.schema import (
    DEFAULT_TIMEOUT,
    EXPERIMENT_NAME,
    HISTORY_SCHEMES,
    MANIFEST_LIMIT,
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
    ModelsConfig,
    Price,
    SkipRule,
    TierConfig,
    _RawManifest,
    load_manifest,
    manifest_schema,
    upstream_problem,
)
