"""The manifest builder: a manifest.toml (and the files its evals run) from Python values.

``manifest(an_eval("a", format="tap"), an_eval("b", dir="e", env={"K": "v"}), tiers={"t1": {}})``
is the manifest of two evals and a ``[tiers.t1]`` table; ``.text`` is its TOML and
``.project()`` the files for the ``project`` fixture (``{"manifest.toml": ..., **each
eval's files}``). ``an_eval`` fills what nearly every eval of the suite says alike:
``tier = "t1"``, ``dir = "evals/NAME"``, ``run = ["python", "score.py"]``; every other
keyword is the eval's key of that name, written as given. ``files={"score.py": ...}``
puts files in the eval's folder (dedented as ``Project.write`` does).
``replayed_pair("a")`` is eval ``a`` in t2 and its twin ``a-live`` in t3 that
records for it (``model = true``, ``fixtures_for = "a"``).

``toml_text(values)`` renders any table of TOML values (str, bool, int, float, list,
dict): nested tables as ``[a.b]``, lists of tables as ``[[a]]``, every string as one
escaped basic string on one line, so ``tomllib.loads(toml_text(v)) == v`` for every
string (tests/test_manifest_builder.py holds it to that) and the dedent of
``Project.write`` cannot change a value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and control characters escaped, the rest as is."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_value(value: Any) -> str:
    """One value as it stands after ``key = ``: arrays and tables inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML value for {type(value).__name__}: {value!r}")


def _is_table_list(value: Any) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str) and bool(value)
            and all(isinstance(v, Mapping) for v in value))


def _table_lines(path: list[str], table: Mapping[str, Any], header: str | None) -> list[str]:
    plain = {k: v for k, v in table.items() if not isinstance(v, Mapping) and not _is_table_list(v)}
    nested = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    listed = {k: v for k, v in table.items() if _is_table_list(v)}
    lines: list[str] = []
    # a table of tables alone needs no header of its own; an empty one does, or it would vanish
    if header is not None and (plain or not (nested or listed) or header.startswith("[[")):
        lines.append(header)
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in plain.items()]
    for key, sub in nested.items():
        sub_path = [*path, toml_key(key)]
        lines += ([""] if lines else []) + _table_lines(sub_path, sub, "[" + ".".join(sub_path) + "]")
    for key, items in listed.items():
        sub_path = [*path, toml_key(key)]
        for item in items:
            lines += ([""] if lines else []) + _table_lines(sub_path, item, "[[" + ".".join(sub_path) + "]]")
    return lines


def toml_text(values: Mapping[str, Any]) -> str:
    """A TOML document whose ``tomllib.loads`` is ``values``."""
    lines = _table_lines([], values, None)
    return "\n".join(lines) + "\n" if lines else ""


@dataclass(frozen=True)
class EvalBlock:
    """One ``[[evals]]`` table and the files of its folder (paths from the project's root)."""

    table: dict[str, Any]
    files: dict[str, str | bytes] = field(default_factory=dict)


def an_eval(
    name: str,
    run: Sequence[str] = ("python", "score.py"),
    *,
    tier: str = "t1",
    dir: str | None = None,  # noqa: A002 -- the manifest's key
    files: Mapping[str, str | bytes] | None = None,
    **keys: Any,
) -> EvalBlock:
    """An eval named ``name`` in ``dir`` (default ``evals/NAME``); ``keys`` are its other manifest keys."""
    folder = f"evals/{name}" if dir is None else dir
    table = {"name": name, "tier": tier, "dir": folder, "run": list(run), **keys}
    return EvalBlock(table, {f"{folder}/{rel}": content for rel, content in (files or {}).items()})


def replayed_pair(
    name: str, run: Sequence[str] = ("python", "score.py"), *, dir: str | None = None,  # noqa: A002
    files: Mapping[str, str | bytes] | None = None, **keys: Any,
) -> tuple[EvalBlock, EvalBlock]:
    """``name`` in t2 replaying what its twin ``NAME-live`` records in t3 (``fixtures_for``): both
    ``model = true``, one folder, the same ``keys``."""
    folder = f"evals/{name}" if dir is None else dir
    return (an_eval(name, run, tier="t2", dir=folder, files=files, model=True, **keys),
            an_eval(f"{name}-live", run, tier="t3", dir=folder, model=True, fixtures_for=name, **keys))


@dataclass(frozen=True)
class Manifest:
    values: dict[str, Any]
    files: dict[str, str | bytes]

    @property
    def text(self) -> str:
        return toml_text(self.values)

    def project(self, extra: Mapping[str, str | bytes] | None = None) -> dict[str, str | bytes]:
        """The files of a project: manifest.toml, each eval's files, then ``extra``."""
        return {"manifest.toml": self.text, **self.files, **(extra or {})}


def manifest(*evals: EvalBlock | Mapping[str, Any], **tables: Any) -> Manifest:
    """A manifest of ``tables`` (``tiers=``, ``models=``, ``baseline=``, ``probes=``, ``services=``,
    ``experiments=``, ... as dicts) and then ``evals`` (``an_eval(...)`` or a plain dict)."""
    blocks = [e if isinstance(e, EvalBlock) else EvalBlock(dict(e)) for e in evals]
    values = dict(tables)
    if blocks:
        values["evals"] = [b.table for b in blocks]
    files: dict[str, str | bytes] = {}
    for block in blocks:
        files.update(block.files)
    return Manifest(values, files)
