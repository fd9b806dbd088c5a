"""The folders show the layers, and the imports keep to them: cli -> commands -> (bites, merge) -> run -> reports_out
-> the domain packages; no package and its importer import each other back (the map in CONTRIBUTING.md).

Every import counts, a function's local one too (a local import is still an arrow)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import evalrun

PACKAGE = Path(evalrun.__file__).resolve().parent

# Each room's layer, top first; a room imports only rooms of its own layer or below.
LAYERS = [
    {"__main__", "cli"},
    {"commands/"},
    {"bites/", "merge"},
    {"run/", "session"},
    {"reports_out/"},
]  # every other room is a domain room: it returns records and imports none of the above


def _room(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "evalrun"
    return parts[0] + "/" if (PACKAGE / parts[0]).is_dir() else parts[0]


def _imports() -> dict[str, dict[str, set[str]]]:
    """room -> imported room -> the files whose imports draw that arrow."""
    arrows: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
        package = module if rel[-1] == "__init__" else module.rpartition(".")[0]
        source = _room(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    targets = [".".join([*base, node.module])] if node.module else [".".join([*base, a.name]) for a in node.names]
                elif node.module:
                    targets = [node.module] if node.module != "evalrun" else [f"evalrun.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target.startswith("evalrun.") and (room := _room(target)) not in (source, "evalrun"):
                    arrows[source][room].add(path.relative_to(PACKAGE).as_posix())
    return arrows


def _layer(room: str) -> int:
    return next((i for i, layer in enumerate(LAYERS) if room in layer), len(LAYERS))


def test_no_room_imports_a_room_of_a_higher_layer() -> None:
    upward = sorted(
        f"{source} -> {target} ({', '.join(sorted(files))})"
        for source, targets in _imports().items()
        for target, files in targets.items()
        if _layer(target) < _layer(source)
    )
    assert upward == []


def test_no_two_rooms_import_each_other() -> None:
    arrows = _imports()
    both = sorted(f"{a} <-> {b}" for a in arrows for b in arrows[a] if a < b and a in arrows.get(b, {}))
    assert both == []


def test_the_layers_name_rooms_that_exist() -> None:
    rooms = {p.name + "/" if p.is_dir() else p.stem for p in PACKAGE.iterdir() if not p.name.startswith(("_", "."))}
    assert {r for layer in LAYERS for r in layer} - {"__main__"} <= rooms
