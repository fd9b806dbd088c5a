"""The manifest's shape: the pydantic models of ``manifest.toml``, the contract users write against.

Each key's type, default and single-field limit lives here, once; the published
JSON Schema (``evalrun schema manifest``) is generated from these models.
Reading a file into them is ``evalrun.manifest.load``; the rules that span
several fields are ``evalrun.manifest.rules``. Probe and service tables have
their shapes in ``evalrun.probes.spec`` and ``evalrun.services.spec``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from evalrun.errors import file_label
from evalrun.models.upstreams import PROVIDERS, upstream_problem
from evalrun.probes.spec import Probe, ProbeTable, parse_requirement
from evalrun.services.spec import ServiceSpec, ServiceTable

TIERS = ("t1", "t2", "t3")
DEFAULT_TIMEOUT = 300.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Budget(_Strict):
    calls: int | None = Field(default=None, gt=0)
    tokens: int | None = Field(default=None, gt=0)
    usd: float | None = Field(default=None, gt=0)  # priced by [models.prices] (evalrun.models.cost)


class Price(_Strict):
    """One model's price in USD per million tokens (``[models.prices]``)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


def _env_names(env: dict[str, str]) -> dict[str, str]:
    """An ``env`` table's names are variable names (an eval's or an experiment's)."""
    for key in env:
        if not key or "=" in key:
            raise ValueError(f"{key!r} is not a variable name; names are non-empty and have no '='")
    return env


EnvTable = Annotated[dict[str, str], AfterValidator(_env_names)]

# An eval or tier names the experiments it runs under: a list, or "all" (the default).
ExperimentList = list[str] | Literal["all"] | None


class SkipRule(_Strict):
    """``skip = { tags = [...], evals = [...], reason = "..." }``: evals that make no sense in a column."""

    evals: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    reason: str = ""


class Experiment(_Strict):
    """``[experiments.NAME]``: one column of the side-by-side comparison (see evalrun.plan)."""

    description: str = ""
    env: EnvTable = Field(default_factory=dict)  # what the column changes, over the eval's own env
    requires: list[str] = Field(default_factory=list)  # probes: unmet skips every eval of the column, loudly
    evals: list[str] = Field(default_factory=list)  # the column runs only these evals (and/or tags)
    tags: list[str] = Field(default_factory=list)
    skip: SkipRule | None = None
    model: str | None = Field(default=None, min_length=1)  # the model the column asks for: EVALRUN_MODEL
    budget: Budget | None = None  # a cap on the whole column's model calls

    def selects(self, spec: EvalSpec) -> bool:
        """Whether the column's own ``evals``/``tags`` selection takes ``spec`` (none: every eval)."""
        if not self.evals and not self.tags:
            return True
        return spec.name in self.evals or bool(set(self.tags) & set(spec.tags))

    def skip_reason(self, name: str, spec: EvalSpec) -> str | None:
        """Why the column's ``skip`` rule leaves ``spec`` out, or None when it does not."""
        rule = self.skip
        if rule is None:
            return None
        tags = sorted(set(rule.tags) & set(spec.tags))
        if spec.name not in rule.evals and not tags:
            return None
        why = f"tag {tags[0]}" if tags else "named"
        return f"skip rule of experiment {name} ({why}){': ' + rule.reason if rule.reason else ''}"


class AnchorFloors(_Strict):
    """``anchors = { min_kappa = 0.6 }`` on an eval: its report is a judge's anchor set (evalrun.scorer.anchors)."""

    min_kappa: float | None = Field(default=None, ge=-1, le=1)  # Cohen's kappa below it fails the eval
    min_ac1: float | None = Field(default=None, ge=-1, le=1)  # Gwet's AC1 below it fails the eval


class TierConfig(_Strict):
    description: str = ""
    require: list[str] = Field(default_factory=list)  # guard: unmet -> refuse the tier (exit 2)
    skips: Literal["skip", "fail"] = "skip"
    budget: Budget | None = None
    model: bool = False  # tier default for evals' ``model``
    # Repeats (evalrun.repeats): the tier's defaults for its evals.
    repeat: int | None = Field(default=None, ge=1)
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    stop: Literal["decided"] | None = None
    alpha: float | None = Field(default=None, gt=0, lt=1)
    too_little_data: Literal["note", "fail"] | None = None  # a rate comparison that cannot tell: note it, or exit 4
    experiments: ExperimentList = None  # the tier's default for its evals
    # Isolation (evalrun.run.isolation): t1/t2 run in a loopback-only network namespace where the system allows it.
    network: Literal["loopback", "host"] | None = None  # unset: "loopback" for t1 and t2; t3 is never isolated
    require_isolation: bool = False  # cannot isolate: exit 2, not a warning


class ModelsConfig(_Strict):
    """``[models]``: how evalrun keeps model calls honest (see evalrun.models.scorer_env, evalrun.models.replay)."""

    key_vars: list[str] = Field(default_factory=list)  # more key variables to keep out of t1/t2
    strict_replay: bool = False  # fixtures recorded but not requested fail the eval
    # How replay pairs a call with its recording: "request" (its digest, then its index; a changed
    # request fails loudly) or "index" (its place in its session alone, whatever it asks).
    replay_match: Literal["request", "index"] = "request"
    # Where record and live modes send calls: one base URL for every provider, or a table per provider
    # ({ openai = "...", anthropic = "..." }); precedence in evalrun.models.upstreams.
    upstream: str | dict[str, str] | None = None
    judge: str | None = Field(default=None, min_length=1)  # the model the scorer SDK's judge() asks
    prices: dict[str, Price] = Field(default_factory=dict)  # per model name; no network lookup

    @field_validator("upstream")
    @classmethod
    def _upstream_is_a_base_url(cls, url: str | dict[str, str] | None) -> str | dict[str, str] | None:
        if isinstance(url, dict):
            for provider, value in url.items():
                if provider not in PROVIDERS:
                    raise ValueError(f"{provider!r} is no provider evalrun routes; use {' or '.join(PROVIDERS)}")
                problem = upstream_problem(value)
                if problem:
                    raise ValueError(f"{provider}: {problem}")
            return url
        problem = upstream_problem(url) if url is not None else None
        if problem:
            raise ValueError(problem)
        return url


class BaselineConfig(_Strict):
    strict: bool = False
    dir: str = "baselines"


HISTORY_SCHEMES = ("postgresql://", "postgres://", "sqlite:")


class HistoryConfig(_Strict):
    """``[history]``: where every run is appended (see evalrun.history)."""

    enabled: bool = Field(default=True, strict=True)  # "yes" is not a boolean
    url: str | None = None  # postgresql://... or sqlite:PATH; may use ${VAR}; default .evalrun/history.sqlite

    @field_validator("url")
    @classmethod
    def _url_has_a_known_scheme(cls, url: str | None) -> str | None:
        if url is None or url.startswith("${") or url.startswith(HISTORY_SCHEMES):
            return url
        raise ValueError('must start with postgresql://, postgres:// or sqlite: (e.g. url = "${HISTORY_URL}")')


class Bite(_Strict):
    """``[[evals.bites]]``: a named breakage of what the eval guards, and the checks that must fail under it
    (see evalrun.bites). Paths are relative to the eval's folder; ``patch`` is a ``git diff`` of the
    repository, applied at its top."""

    name: str = Field(min_length=1)
    patch: str | None = Field(default=None, min_length=1)
    env: EnvTable = Field(default_factory=dict)
    replace: dict[str, str] = Field(default_factory=dict)  # target = source
    fails: list[str] = Field(min_length=1)
    description: str = ""

    @field_validator("name")
    @classmethod
    def _bite_name_is_one_line(cls, name: str) -> str:
        if name != name.strip() or "\n" in name:
            raise ValueError("must be one line, without surrounding spaces")
        return name


class EvalSpec(_Strict):
    name: str = Field(min_length=1)
    tier: str
    dir: str = Field(min_length=1)
    run: list[str] = Field(min_length=1)
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    requires: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    shell: bool = False
    env: EnvTable = Field(default_factory=dict)
    format: Literal["json", "tap", "junit", "pytest-reportlog", "inspect", "promptfoo", "exit"] = "json"
    junit: str | None = None
    reportlog: str | None = None  # with format = "pytest-reportlog": the file pytest --report-log writes
    promptfoo: str | None = None  # with format = "promptfoo": the file `promptfoo eval -o` writes
    services: list[str] = Field(default_factory=list)
    model: bool | None = None
    paths: list[str] = Field(default_factory=list)
    budget: Budget | None = None
    # The eval whose fixtures this one records and plays: its default session and fixtures folder
    # (a t3 eval recording for a t2 eval of another name).
    fixtures_for: str | None = None
    # Repeats (evalrun.repeats); unset: the tier's value, else 1 run, floor 1.0, no early stop, alpha 0.05.
    repeat: int | None = Field(default=None, ge=1)
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    stop: Literal["decided"] | None = None
    alpha: float | None = Field(default=None, gt=0, lt=1)
    too_little_data: Literal["note", "fail"] | None = None  # unset: the tier's value, else "note"
    anchors: AnchorFloors | None = None  # this eval measures a judge on human-labelled anchors
    experiments: ExperimentList = None  # unset: the tier's list, else every experiment
    bites: list[Bite] = Field(default_factory=list)  # evalrun bites: each must turn its checks red

    @field_validator("run")
    @classmethod
    def _run_words_non_empty(cls, run: list[str]) -> list[str]:
        if any(not word for word in run):
            raise ValueError("argv words must be non-empty strings")
        return run

    @field_validator("name")
    @classmethod
    def _name_is_one_line(cls, name: str) -> str:
        if name != name.strip() or "\n" in name or "/" in name:
            raise ValueError("must be one line, without '/' or surrounding spaces")
        return name


# Probe and service tables are checked by their own parsers (for their precise
# messages); the published schema still describes their shape.
_ProbeTables = Annotated[
    dict[str, dict[str, Any]],
    WithJsonSchema({"type": "object", "additionalProperties": ProbeTable.model_json_schema()}),
]
_ServiceTables = Annotated[
    dict[str, dict[str, Any]],
    WithJsonSchema({"type": "object", "additionalProperties": ServiceTable.model_json_schema()}),
]


class ManifestKeys(_Strict):
    """The top-level keys a manifest file holds and a loaded ``Manifest`` keeps as they are, defined once.

    The two forms differ in ``probes`` and ``services`` only: as written (tables
    for their own parsers) and as parsed.
    """

    # Folders (relative to the manifest) put in front of PYTHONPATH for the scorers and the python: probe,
    # so a scorer imports the project under test without editing sys.path.
    pythonpath: list[str] = Field(default_factory=list)
    tiers: dict[str, TierConfig] = Field(default_factory=dict)  # none written: the three tiers, with defaults
    baseline: BaselineConfig = BaselineConfig()
    models: ModelsConfig = ModelsConfig()
    history: HistoryConfig = HistoryConfig()
    experiments: dict[str, Experiment] = Field(default_factory=dict)
    evals: list[EvalSpec] = Field(default_factory=list)


# A manifest file as written (no docstring: it would become the published schema's description).
class _RawManifest(ManifestKeys):
    probes: _ProbeTables = Field(default_factory=dict)
    services: _ServiceTables = Field(default_factory=dict)


class Manifest(ManifestKeys):
    """The validated manifest. ``root`` is the folder that holds it; ``probes`` and ``services`` are parsed."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    path: Path
    root: Path
    probes: dict[str, Probe] = Field(default_factory=dict)  # the named [probes.NAME]
    services: dict[str, ServiceSpec] = Field(default_factory=dict)

    def uses_model(self, spec: EvalSpec) -> bool:
        """Whether an eval's model calls go through the proxy (t2 and t3 only)."""
        if spec.tier == "t1":
            return False
        return spec.model if spec.model is not None else self.tier(spec.tier).model

    def columns(self, spec: EvalSpec) -> list[str]:
        """The experiments ``spec`` runs under, in manifest order: its own ``experiments`` (else its
        tier's, else all), narrowed by each experiment's selection. Empty: it runs once, plainly."""
        listed = spec.experiments if spec.experiments is not None else self.tier(spec.tier).experiments
        names = list(self.experiments) if listed is None or listed == "all" else [n for n in self.experiments if n in listed]
        return [n for n in names if self.experiments[n].selects(spec)]

    def eval_dir(self, spec: EvalSpec) -> Path:
        return (self.root / spec.dir).resolve()

    def python_paths(self) -> list[Path]:
        """``pythonpath``'s folders, absolute, in the manifest's order."""
        return [(self.root / entry).resolve() for entry in self.pythonpath]

    def names(self) -> list[str]:
        return [e.name for e in self.evals]

    def tier(self, name: str) -> TierConfig:
        return self.tiers.get(name, TierConfig())

    def requirement(self, requirement: str) -> Probe:
        """The probe behind a ``requires`` entry (validated when the manifest was loaded)."""
        return parse_requirement(file_label(self.path), self.probes, requirement, "requires")


def manifest_schema() -> dict[str, Any]:
    return _RawManifest.model_json_schema()
