"""Loading ``manifest.toml`` into validated, plain data, in one pass.

This module owns the manifest's shape (the contract users write against) and
every message about a manifest mistake. No tomllib or pydantic exception leaves
it: each becomes a ``ManifestError`` naming the file, the place and the fix, e.g.
``manifest.toml: evals[3] ("rls-isolation").timeout: must be > 0``. Probe and
service tables are parsed here too (their shapes live in ``evalrun.probes.spec``
and ``evalrun.services.spec``), so a loaded manifest is valid as a whole.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator

from evalrun.errors import ManifestError, file_label
from evalrun.files import FileReadError, read_bounded
from evalrun.text import one_line
from evalrun.secrets import key_vars
from evalrun.probes.spec import SERVICE_KINDS, Probe, ProbeTable, parse_probe_table, parse_requirement
from evalrun.services.spec import ServiceSpec, ServiceTable, check_exports, parse_service_tables

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
    # Isolation (evalrun.isolation): t1/t2 run in a loopback-only network namespace where the system allows it.
    network: Literal["loopback", "host"] | None = None  # unset: "loopback" for t1 and t2; t3 is never isolated
    require_isolation: bool = False  # cannot isolate: exit 2, not a warning


class ModelsConfig(_Strict):
    """``[models]``: how evalrun keeps model calls honest (see evalrun.models.scorer_env, evalrun.models.replay)."""

    key_vars: list[str] = Field(default_factory=list)  # more key variables to keep out of t1/t2
    strict_replay: bool = False  # fixtures recorded but not requested fail the eval
    # How replay pairs a call with its recording: "request" (its digest, then its index; a changed
    # request fails loudly) or "index" (its place in its session alone, whatever it asks).
    replay_match: Literal["request", "index"] = "request"
    upstream: str | None = None  # where record and live modes send calls (default: by API style)
    judge: str | None = Field(default=None, min_length=1)  # the model the scorer SDK's judge() asks
    prices: dict[str, Price] = Field(default_factory=dict)  # per model name; no network lookup

    @field_validator("upstream")
    @classmethod
    def _upstream_is_a_base_url(cls, url: str | None) -> str | None:
        problem = upstream_problem(url) if url is not None else None
        if problem:
            raise ValueError(problem)
        return url


def upstream_problem(url: str) -> str | None:
    """Why ``url`` cannot be an upstream (``http://host:port`` or ``http://host:port/v1``), or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return 'must be a base URL such as "https://api.openai.com" or "http://127.0.0.1:8765/v1"'
    if parts.query or parts.fragment:
        return "must have no query or fragment; give the base URL the API paths follow"
    return None


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
    format: Literal["json", "tap", "junit", "pytest-reportlog", "inspect", "promptfoo"] = "json"
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


class Manifest(_Strict):
    """The validated manifest. ``root`` is the folder that holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    path: Path
    root: Path
    tiers: dict[str, TierConfig]
    # Folders (relative to the manifest) put in front of PYTHONPATH for the scorers and the python: probe,
    # so a scorer imports the project under test without editing sys.path.
    pythonpath: list[str] = Field(default_factory=list)
    probes: dict[str, Probe] = Field(default_factory=dict)  # the named [probes.NAME]
    services: dict[str, ServiceSpec] = Field(default_factory=dict)
    baseline: BaselineConfig = BaselineConfig()
    models: ModelsConfig = ModelsConfig()
    history: HistoryConfig = HistoryConfig()
    experiments: dict[str, Experiment] = Field(default_factory=dict)
    evals: list[EvalSpec] = Field(default_factory=list)

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


class _RawManifest(_Strict):
    pythonpath: list[str] = Field(default_factory=list)
    tiers: dict[str, TierConfig] = Field(default_factory=dict)
    probes: _ProbeTables = Field(default_factory=dict)
    services: _ServiceTables = Field(default_factory=dict)
    baseline: BaselineConfig = BaselineConfig()
    models: ModelsConfig = ModelsConfig()
    history: HistoryConfig = HistoryConfig()
    experiments: dict[str, Experiment] = Field(default_factory=dict)
    evals: list[EvalSpec] = Field(default_factory=list)


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; raise ManifestError with a one-line message.

    Whatever the bytes: a number too long to convert, nesting deeper than the
    parser can follow, a NUL in any string are each one line naming the file.
    """
    label = file_label(path)
    try:
        return _load_manifest(path, label)
    except ManifestError as exc:
        raise ManifestError(one_line(str(exc), _ERROR_LIMIT)) from None
    except RecursionError:
        raise ManifestError(f"{label}: nested too deeply to read; flatten its arrays and tables") from None
    except ValueError as exc:  # int() refuses numbers of more than 4300 digits
        raise ManifestError(f"{label}: cannot be read: {one_line(str(exc), 200)}; shorten that number") from None


_ERROR_LIMIT = 1000
MANIFEST_LIMIT = 16 * 1024 * 1024  # bytes read of a manifest: thousands of evals fit in far less


def _load_manifest(path: Path, label: str) -> Manifest:
    try:
        # A byte order mark (Windows editors save UTF-8 with one) is no TOML, and no mistake either.
        raw_text = read_bounded(path, MANIFEST_LIMIT, "a manifest").decode("utf-8").removeprefix("\ufeff")
    except FileReadError as exc:
        if exc.missing:
            raise ManifestError(f"{label}: no such file; create it or pass --manifest PATH") from None
        raise ManifestError(f"{label}: {exc.reason}; pass the manifest file with --manifest PATH") from None
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{label}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    try:
        data = tomllib.loads(raw_text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{label}: invalid TOML: {exc}") from None
    _refuse_nul(label, data, ())
    try:
        raw = _RawManifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(_describe_validation_error(label, data, exc)) from None
    root = path.resolve().parent
    probes = {name: parse_probe_table(f"{label}: probes.{name}", name, table) for name, table in raw.probes.items()}
    manifest = Manifest(
        path=path,
        root=root,
        tiers=raw.tiers or {t: TierConfig() for t in TIERS},
        pythonpath=raw.pythonpath,
        probes=probes,
        services=parse_service_tables(label, root, raw.services, probes),
        baseline=raw.baseline,
        models=raw.models,
        history=raw.history,
        experiments=raw.experiments,
        evals=raw.evals,
    )
    _check_semantics(label, manifest)
    return manifest


def _refuse_nul(label: str, node: Any, loc: tuple[Any, ...]) -> None:
    """No string of a manifest may hold NUL: no argv word, path or variable can carry one to the OS."""
    if isinstance(node, str):
        if "\0" in node:
            raise ManifestError(f"{label}: {_where_plain(loc)}: contains a NUL character (\\u0000); remove it")
    elif isinstance(node, dict):
        for key, value in node.items():
            if "\0" in key:
                raise ManifestError(f"{label}: {_where_plain(loc)}: a key contains a NUL character; remove it")
            _refuse_nul(label, value, (*loc, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _refuse_nul(label, value, (*loc, index))


def _where_plain(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] += f"[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts) or "top level"


def _where(data: Any, loc: tuple[Any, ...]) -> str:
    """Render a pydantic location as ``evals[3] ("name").timeout``."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            parts[-1] = f"{parts[-1]}[{item}]" if parts else f"[{item}]"
            node = node[item] if isinstance(node, list) and item < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                parts[-1] += f' ("{node["name"]}")'
        else:
            parts.append(str(item))
            node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts)


_MESSAGES = {
    "extra_forbidden": "unknown key; check its spelling against the manifest reference (docs/manifest.md)",
    "missing": "required key is missing",
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "too_short": "must not be empty",
    "string_too_short": "must not be empty",
    "literal_error": "must be one of {expected}",
    "string_type": "must be a string",
    "list_type": "must be an array",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "bool_type": "must be true or false",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
}


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the table at ``loc`` takes, found by walking the manifest's models; [] where the walk is lost."""
    current: Any = _RawManifest
    for item in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(item))
            if field is None:
                return []
            current = field.annotation
        elif get_origin(current) in (list, dict):  # an index, or a name chosen by the user (tiers.t1)
            current = get_args(current)[-1]
        else:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [field.alias or name for name, field in current.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and of ``X | None``."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) in (Union, UnionType):
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation
            annotation = options[0]
        else:
            return annotation


def _describe_validation_error(label: str, data: Any, exc: ValidationError) -> str:
    errors = exc.errors()
    err = errors[0]
    loc = tuple(p for p in err["loc"] if p not in ("function-after",))
    template = _MESSAGES.get(err["type"])
    if err["type"] == "extra_forbidden" and loc:
        close = difflib.get_close_matches(str(loc[-1]), _known_keys(loc[:-1]), n=1, cutoff=0.6)
        if close:
            template = f'unknown key; did you mean "{close[0]}"?'
    ctx = {k: (f"{v:g}" if isinstance(v, float) else v) for k, v in (err.get("ctx") or {}).items()}
    if template is not None:
        try:
            msg = template.format(**ctx)
        except (KeyError, IndexError):
            msg = template
    else:
        msg = str(err["msg"])
        msg = msg.removeprefix("Value error, ")
        msg = msg[:1].lower() + msg[1:]
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    where = _where(data, loc) or "top level"
    return f"{label}: {where}: {msg}{more}"


def _check_semantics(label: str, manifest: Manifest) -> None:
    for tier in manifest.tiers:
        if tier not in TIERS:
            raise ManifestError(f"{label}: tiers.{tier}: unknown tier; use one of {', '.join(TIERS)}")
    _check_pythonpath(label, manifest)
    seen: dict[str, int] = {}
    for index, spec in enumerate(manifest.evals):
        where = f'{label}: evals[{index}] ("{spec.name}")'
        if spec.name in seen:
            raise ManifestError(
                f"{where}.name: duplicate eval name, also evals[{seen[spec.name]}]; names must be unique"
            )
        seen[spec.name] = index
        if spec.tier not in manifest.tiers:
            known = ", ".join(manifest.tiers)
            raise ManifestError(f"{where}.tier: unknown tier {spec.tier!r}; use one of {known}")
        folder = (manifest.root / spec.dir).resolve()
        if not folder.is_relative_to(manifest.root):
            raise ManifestError(f"{where}.dir: {spec.dir!r} lies outside the manifest's folder; keep evals under it")
        if not folder.is_dir():
            raise ManifestError(f"{where}.dir: {spec.dir!r} does not exist; create it or fix the path")
        if spec.format == "junit" and not spec.junit:
            raise ManifestError(f'{where}.junit: format = "junit" needs junit = "path of the XML the scorer writes"')
        if spec.junit is not None:
            _check_inside(f"{where}.junit", spec.junit, folder)
        if spec.format == "pytest-reportlog" and not spec.reportlog:
            raise ManifestError(
                f'{where}.reportlog: format = "pytest-reportlog" needs reportlog = "the file pytest --report-log '
                f'writes", e.g. "out/report.jsonl"'
            )
        if spec.reportlog is not None:
            if spec.format != "pytest-reportlog":
                raise ManifestError(f'{where}.reportlog: only read with format = "pytest-reportlog"; set it or drop the key')
            _check_inside(f"{where}.reportlog", spec.reportlog, folder)
        _check_tool_format(where, spec, folder)
        for service in spec.services:
            if service not in manifest.services:
                raise ManifestError(f"{where}.services: unknown service {service!r}; define [services.{service}]")
        check_exports(label, index, spec.name, spec.services, manifest.services)
        for req in spec.requires:
            kind = parse_requirement(label, manifest.probes, req, f'evals[{index}] ("{spec.name}").requires').kind
            if spec.tier == "t1" and kind in SERVICE_KINDS:
                raise ManifestError(
                    f"{where}.requires: {req!r} is a {kind} probe, a service; t1 is static by promise, "
                    f"move the eval to t2"
                )
        if spec.tier == "t1" and spec.model:
            raise ManifestError(f"{where}.model: t1 makes no model calls, not even replayed ones; move the eval to t2")
        if spec.tier == "t1" and spec.budget is not None:
            raise ManifestError(f"{where}.budget: t1 makes no model calls, so it has no budget; remove it")
        if spec.fixtures_for is not None and spec.fixtures_for not in manifest.names():
            raise ManifestError(
                f"{where}.fixtures_for: no eval is named {spec.fixtures_for!r}; name the eval whose fixtures this one records"
            )
        if spec.tier == "t1" and spec.services:
            raise ManifestError(f"{where}.services: t1 is static by promise and uses no services; move the eval to t2")
        _check_bites(where, manifest, spec, folder)
    _check_sessions_apart(label, manifest)
    _check_keys_stay_out(label, manifest)
    for tier_name, tier in manifest.tiers.items():
        if tier_name == "t3" and (tier.network == "loopback" or tier.require_isolation):
            key = "network" if tier.network == "loopback" else "require_isolation"
            raise ManifestError(f"{label}: tiers.t3.{key}: t3 is live and never isolated; remove it, or isolate t1 and t2")
        if tier.require_isolation and tier.network == "host":
            raise ManifestError(
                f'{label}: tiers.{tier_name}.require_isolation: the tier sets network = "host", which is never isolated; '
                f"drop one of them"
            )
        for req in tier.require:
            parse_requirement(label, manifest.probes, req, f"tiers.{tier_name}.require")
        _check_experiment_list(label, manifest, tier.experiments, f"tiers.{tier_name}.experiments")
    _check_experiments(label, manifest)


def _check_sessions_apart(label: str, manifest: Manifest) -> None:
    """Two evals never record into one replay session: ``t3 --record`` would write one's answers over the other's.

    An eval's default session is its name made a folder name (``chat v1`` and
    ``chat-v1`` are both ``chat-v1``), in its fixtures folder; ``fixtures_for``
    shares another eval's on purpose.
    """
    from evalrun.models.replay.fixtures import default_session  # the proxy's own folding, imported when needed

    owners: dict[tuple[Path, str], tuple[int, str]] = {}
    by_name = {spec.name: spec for spec in manifest.evals}
    for index, spec in enumerate(manifest.evals):
        if spec.tier == "t1" or not manifest.uses_model(spec):
            continue
        owner = by_name.get(spec.fixtures_for or spec.name, spec)
        key = (manifest.eval_dir(owner).resolve(), default_session(owner.name))
        first = owners.setdefault(key, (index, owner.name))
        if first[1] != owner.name:
            other = manifest.evals[first[0]].name
            raise ManifestError(
                f'{label}: evals[{index}] ("{spec.name}") and evals[{first[0]}] ("{other}") would record into one '
                f"replay session, {owner.dir}/fixtures/{key[1]}/ (names fold to the same folder name); rename one so "
                f'they differ in letters or digits, give it its own dir, or share on purpose with fixtures_for = "{other}"'
            )


def _check_bites(where: str, manifest: Manifest, spec: EvalSpec, folder: Path) -> None:
    """Each bite names a breakage that exists in the checkout, once, and stays inside the manifest's folder."""
    keys = key_vars(manifest.models.key_vars)
    seen: set[str] = set()
    for index, bite in enumerate(spec.bites):
        at = f'{where}.bites[{index}] ("{bite.name}")'
        if bite.name in seen:
            raise ManifestError(f"{at}.name: duplicate bite name in this eval; names must be unique")
        seen.add(bite.name)
        if bite.patch is None and not bite.env and not bite.replace:
            raise ManifestError(f'{at}: breaks nothing; give it a patch = "...", env = {{ ... }} or replace = {{ "file" = "other file" }}')
        paths = ([("patch", bite.patch)] if bite.patch else []) + [("replace", source) for source in bite.replace.values()]
        for key, relative in paths:
            target = (folder / relative).resolve()
            if not target.is_relative_to(manifest.root) or Path(relative).is_absolute():
                raise ManifestError(f"{at}.{key}: {relative!r} lies outside the manifest's folder; keep bites in the repository")
            if not target.is_file():
                raise ManifestError(f"{at}.{key}: {relative!r} does not exist (relative to {spec.dir}); create it or fix the path")
        for relative in bite.replace:
            target = (folder / relative).resolve()
            if Path(relative).is_absolute() or not target.is_relative_to(manifest.root) or target == manifest.root:
                raise ManifestError(f"{at}.replace: {relative!r} lies outside the manifest's folder; name a file in the repository")
        if spec.tier in ("t1", "t2"):
            for name, value in bite.env.items():
                problem = _key_use(name, value, keys)
                if problem:
                    raise ManifestError(f"{at}.env.{name}: {problem}; {spec.tier} gets no model key")


def _check_pythonpath(label: str, manifest: Manifest) -> None:
    """Each ``pythonpath`` entry is a folder, named relative to the manifest (so the suite runs on any machine)."""
    for index, entry in enumerate(manifest.pythonpath):
        where = f"{label}: pythonpath[{index}]"
        if not entry.strip() or ":" in entry:
            raise ManifestError(f"{where}: {entry!r} is not a folder name; list one folder per entry, e.g. \"src\"")
        if Path(entry).is_absolute():
            raise ManifestError(f"{where}: {entry!r} is absolute; name the folder relative to the manifest, e.g. \"src\"")
        if not (manifest.root / entry).is_dir():
            raise ManifestError(f"{where}: {entry!r} is not a folder next to the manifest; create it or fix the path")


EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


def _check_experiment_list(label: str, manifest: Manifest, names: ExperimentList, where: str) -> None:
    for name in names if isinstance(names, list) else []:
        if name not in manifest.experiments:
            known = ", ".join(manifest.experiments) or "(the manifest defines none)"
            raise ManifestError(f"{label}: {where}: unknown experiment {name!r}; define [experiments.{name}] or use one of: {known}")


def _check_experiments(label: str, manifest: Manifest) -> None:
    """Experiment names make readable cell names (``eval[name]``) and folder names (``fixtures/@name``)."""
    names = set(manifest.names())
    keys = key_vars(manifest.models.key_vars)
    for index, spec in enumerate(manifest.evals):
        _check_experiment_list(label, manifest, spec.experiments, f'evals[{index}] ("{spec.name}").experiments')
    for name, experiment in manifest.experiments.items():
        where = f"{label}: experiments.{name}"
        if not EXPERIMENT_NAME.match(name):
            raise ManifestError(
                f"{where}: {name!r} cannot name a column; use letters, digits, '.', '_' and '-' (up to 64), "
                f"starting with a letter or digit"
            )
        for field_name, listed in (("evals", experiment.evals), ("skip.evals", experiment.skip.evals if experiment.skip else [])):
            for eval_name in listed:
                if eval_name not in names:
                    raise ManifestError(f"{where}.{field_name}: no eval is named {eval_name!r}; fix the name or remove it")
        runs = [s for s in manifest.evals if name in manifest.columns(s)]
        static = [s for s in runs if s.tier == "t1"]
        keyless = [s for s in runs if s.tier in ("t1", "t2")]
        for req in experiment.requires:
            kind = parse_requirement(label, manifest.probes, req, f"experiments.{name}.requires").kind
            if static and kind in SERVICE_KINDS:
                raise ManifestError(
                    f"{where}.requires: {req!r} is a {kind} probe, a service, and the experiment runs "
                    f"{static[0].name} (t1), which is static by promise; narrow the experiment with tags or evals"
                )
        for key, value in experiment.env.items():
            problem = _key_use(key, value, keys)
            if problem and keyless:
                raise ManifestError(
                    f"{where}.env.{key}: {problem}; the experiment runs {keyless[0].name} ({keyless[0].tier}), "
                    f"which gets no model key; key variables are for t3 only"
                )
    for spec in manifest.evals:
        for name in manifest.experiments:
            if f"{spec.name}[{name}]" in names:
                raise ManifestError(
                    f'{label}: experiments.{name}: eval "{spec.name}" under it would be named "{spec.name}[{name}]", '
                    f"which is already an eval's name; rename one of them"
                )



def _check_tool_format(where: str, spec: EvalSpec, folder: Path) -> None:
    """The keys of the eval tools' native formats (docs/recipes-eval-tools.md)."""
    if spec.format == "promptfoo" and not spec.promptfoo:
        raise ManifestError(
            f'{where}.promptfoo: format = "promptfoo" needs promptfoo = "the file promptfoo eval -o writes", '
            f'e.g. "out.json"'
        )
    if spec.promptfoo is not None:
        if spec.format != "promptfoo":
            raise ManifestError(f'{where}.promptfoo: only read with format = "promptfoo"; set it or drop the key')
        if not spec.promptfoo.endswith(".json"):
            raise ManifestError(
                f"{where}.promptfoo: {spec.promptfoo!r} must end in .json (promptfoo picks its output's format "
                f'by the extension), e.g. "out.json"'
            )
        _check_inside(f"{where}.promptfoo", spec.promptfoo, folder)
    if spec.format == "inspect" and "INSPECT_LOG_DIR" in spec.env:
        raise ManifestError(
            f'{where}.env.INSPECT_LOG_DIR: with format = "inspect" evalrun sets it (a fresh folder per run); '
            f"drop it from env"
        )


def _check_inside(where: str, relative: str, folder: Path) -> None:
    """A path a scorer names stays inside its eval's folder: evalrun deletes it before the scorer starts."""
    fix = "name a path inside the eval's folder, e.g. \"reports/junit.xml\""
    if "\0" in relative or not relative.strip():
        raise ManifestError(f"{where}: must be a non-empty path without NUL; {fix}")
    if Path(relative).is_absolute():
        raise ManifestError(f"{where}: {relative!r} is absolute; {fix}")
    target = (folder / relative).resolve()
    if target == folder or not target.is_relative_to(folder):
        raise ManifestError(f"{where}: {relative!r} lies outside the eval's folder; {fix}")


def _check_keys_stay_out(label: str, manifest: Manifest) -> None:
    """t1/t2 get no provider key, ever: not by name in ``env``, nor by ``${KEYVAR}`` in a value.

    This holds for an eval's ``env`` and for the ``env`` of every service a t1/t2
    eval uses (a service shared with t3 evals included: it runs in t2 too).
    """
    keys = key_vars(manifest.models.key_vars)
    keyless = {spec.name: spec for spec in manifest.evals if spec.tier in ("t1", "t2")}
    fix = "key variables are for t3 only; move the eval to t3 or remove it"
    for index, spec in enumerate(manifest.evals):
        if spec.name not in keyless:
            continue
        where = f'{label}: evals[{index}] ("{spec.name}").env'
        for name, value in spec.env.items():
            problem = _key_use(name, value, keys)
            if problem:
                raise ManifestError(f"{where}.{name}: {problem}; {spec.tier} gets no model key, {fix}")
    for service_name, service in manifest.services.items():
        users = sorted(s.name for s in keyless.values() if service_name in s.services)
        if not users:
            continue
        for name, value in service.env.items():
            problem = _key_use(name, value, keys)
            if problem:
                raise ManifestError(
                    f"{label}: services.{service_name}.env.{name}: {problem}; the service is used by "
                    f"{users[0]} ({keyless[users[0]].tier}), which gets no model key; {fix}"
                )


def _key_use(name: str, value: str, keys: tuple[str, ...]) -> str | None:
    """How an ``env`` entry hands a provider key over, if it does (names only, never values)."""
    if name in keys:
        return f"{name} is a model key variable"
    for ref in _VAR_REF.finditer(value):
        var = ref.group(1) or ref.group(2)
        if var in keys:
            return f"refers to ${{{var}}}, a model key variable"
    return None


_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def manifest_schema() -> dict[str, Any]:
    return _RawManifest.model_json_schema()
