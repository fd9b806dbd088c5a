"""Loading ``manifest.toml`` into validated, plain data, in one pass.

This module owns the manifest's shape (the contract users write against) and
every message about a manifest mistake. No tomllib or pydantic exception leaves
it: each becomes a ``ManifestError`` naming the file, the place and the fix, e.g.
``manifest.toml: evals[3] ("rls-isolation").timeout: must be > 0``. Probe and
service tables are parsed here too (their shapes live in ``evalrun.probes.spec``
and ``evalrun.services.spec``), so a loaded manifest is valid as a whole.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator

from evalrun.errors import ManifestError, file_label
from evalrun.probes.spec import SERVICE_KINDS, Probe, ProbeTable, parse_probe_table, parse_requirement
from evalrun.services.spec import ServiceSpec, ServiceTable, check_exports, parse_service_tables

TIERS = ("t1", "t2", "t3")
DEFAULT_TIMEOUT = 300.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Budget(_Strict):
    calls: int | None = Field(default=None, gt=0)
    tokens: int | None = Field(default=None, gt=0)


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


class ModelsConfig(_Strict):
    """``[models]``: how evalrun keeps model calls honest (see evalrun.models.scorer_env, evalrun.models.replay)."""

    key_vars: list[str] = Field(default_factory=list)  # more key variables to keep out of t1/t2
    strict_replay: bool = False  # fixtures recorded but not requested fail the eval
    upstream: str | None = None  # where record and live modes send calls (default: by API style)


class BaselineConfig(_Strict):
    strict: bool = False
    dir: str = "baselines"


class EvalSpec(_Strict):
    name: str = Field(min_length=1)
    tier: str
    dir: str = Field(min_length=1)
    run: list[str] = Field(min_length=1)
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    requires: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    shell: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    format: Literal["json", "tap", "junit"] = "json"
    junit: str | None = None
    services: list[str] = Field(default_factory=list)
    model: bool | None = None
    paths: list[str] = Field(default_factory=list)
    budget: Budget | None = None
    # Repeats (evalrun.repeats); unset: the tier's value, else 1 run, floor 1.0, no early stop, alpha 0.05.
    repeat: int | None = Field(default=None, ge=1)
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    stop: Literal["decided"] | None = None
    alpha: float | None = Field(default=None, gt=0, lt=1)

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
    probes: dict[str, Probe] = Field(default_factory=dict)  # the named [probes.NAME]
    services: dict[str, ServiceSpec] = Field(default_factory=dict)
    baseline: BaselineConfig = BaselineConfig()
    models: ModelsConfig = ModelsConfig()
    evals: list[EvalSpec] = Field(default_factory=list)

    def uses_model(self, spec: EvalSpec) -> bool:
        """Whether an eval's model calls go through the proxy (t2 and t3 only)."""
        if spec.tier == "t1":
            return False
        return spec.model if spec.model is not None else self.tier(spec.tier).model

    def eval_dir(self, spec: EvalSpec) -> Path:
        return (self.root / spec.dir).resolve()

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
    tiers: dict[str, TierConfig] = Field(default_factory=dict)
    probes: _ProbeTables = Field(default_factory=dict)
    services: _ServiceTables = Field(default_factory=dict)
    baseline: BaselineConfig = BaselineConfig()
    models: ModelsConfig = ModelsConfig()
    evals: list[EvalSpec] = Field(default_factory=list)


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; raise ManifestError with a one-line message."""
    label = file_label(path)
    try:
        raw_text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{label}: no such file; create it or pass --manifest PATH") from None
    except IsADirectoryError:
        raise ManifestError(f"{label}: is a directory; pass the manifest file with --manifest PATH") from None
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{label}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    try:
        data = tomllib.loads(raw_text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{label}: invalid TOML: {exc}") from None
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
        probes=probes,
        services=parse_service_tables(label, root, raw.services, probes),
        baseline=raw.baseline,
        models=raw.models,
        evals=raw.evals,
    )
    _check_semantics(label, manifest)
    return manifest


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
    "extra_forbidden": "unknown key; check its spelling against the manifest reference in the README",
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


def _describe_validation_error(label: str, data: Any, exc: ValidationError) -> str:
    errors = exc.errors()
    err = errors[0]
    loc = tuple(p for p in err["loc"] if p not in ("function-after",))
    template = _MESSAGES.get(err["type"])
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
        if spec.tier == "t1" and spec.services:
            raise ManifestError(f"{where}.services: t1 is static by promise and uses no services; move the eval to t2")
    for tier_name, tier in manifest.tiers.items():
        for req in tier.require:
            parse_requirement(label, manifest.probes, req, f"tiers.{tier_name}.require")


def manifest_schema() -> dict[str, Any]:
    return _RawManifest.model_json_schema()
