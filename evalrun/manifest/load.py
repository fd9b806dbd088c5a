"""Reading ``manifest.toml`` into a ``Manifest``, and every message about a file that does not fit its shape.

No tomllib or pydantic exception leaves this module: each becomes a
``ManifestError`` of one line naming the file, the place and the fix, e.g.
``manifest.toml: evals[3] ("rls-isolation").timeout: must be > 0``. Probe and
service tables are parsed here too, and the cross-field rules
(``evalrun.manifest.rules``) checked, so a loaded manifest is valid as a whole.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from evalrun.errors import ManifestError, file_label
from evalrun.files import FileReadError, read_bounded
from evalrun.manifest.rules import check_rules
from evalrun.manifest.schema import TIERS, Manifest, ManifestKeys, TierConfig, _RawManifest
from evalrun.probes.spec import parse_probe_table
from evalrun.services.spec import parse_service_tables
from evalrun.text import one_line, plural


def find_manifest_upward(start: Path, name: str = "manifest.toml") -> Path | None:
    """``name`` in ``start`` or the nearest folder above it, as git and pytest find their root; None if none.

    The search stops at the first folder that holds ``.git`` (a repository's root): a manifest above the
    repository belongs to another project.
    """
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / name).is_file():
            return candidate / name
        if (candidate / ".git").exists():
            return None
    return None


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
    shared = {key: getattr(raw, key) for key in ManifestKeys.model_fields}
    shared["tiers"] = raw.tiers or {t: TierConfig() for t in TIERS}
    manifest = Manifest(
        path=path,
        root=root,
        probes=probes,
        services=parse_service_tables(label, root, raw.services, probes),
        **shared,
    )
    check_rules(label, manifest)
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
    more = f" (and {plural(len(errors) - 1, 'more problem')})" if len(errors) > 1 else ""
    where = _where(data, loc) or "top level"
    return f"{label}: {where}: {msg}{more}"
