"""Mutation testing: change one operator, constant or statement of a module at a time and see a test fail.

    python bench/mutate.py evalrun/verdict.py tests/baseline/test_power.py tests/baseline/test_baseline.py
    python bench/mutate.py evalrun/stats.py tests/test_stats.py tests/baseline/test_power.py --jobs 2 --show-survivors
    python bench/mutate.py evalrun/baseline.py tests/baseline/test_baseline.py --functions compare_to_baseline,_diff_eval

Each mutant is the module with exactly one change, applied to a copy of the
repository in a temporary folder (the working tree is never touched); the
named tests run against that copy (``python -m pytest -x -q -n 0``) with the
copy first on ``PYTHONPATH``, so subprocesses the tests start import the
mutant too. A mutant is *killed* when the tests fail, *survives* when they
pass, and *timed out* (counted as killed, as mutation tools do) when they run
past ``--timeout``. The score is killed / (killed + survived).

The changes, on the module's syntax tree (a stdlib-only mutator, so the same
script runs wherever the suite runs):

- comparisons: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``in`` <-> ``not in``,
  ``is`` <-> ``is not``;
- arithmetic: ``+`` <-> ``-``, ``*`` <-> ``/``, ``//`` -> ``/``;
- boolean operators: ``and`` <-> ``or``; ``not x`` -> ``x``;
- constants: an integer ``n`` -> ``n + 1``, ``True`` <-> ``False``, a float ``x`` -> ``x * 2``
  (0 -> 1), a non-empty string -> ``""``;
- statements: a function body's statement (an expression, an assignment, an
  ``if`` or a ``raise``) replaced by ``pass``; ``return x`` -> ``return None``.

Docstrings, ``__future__`` imports and type annotations are left alone.
``--functions a,b`` mutates only the named functions (top-level or methods, with
what they contain) and ``--lines 120-180`` only the sites on those lines, so one
concern of a larger module is scored on its own; the mutants keep the numbers
they have in the whole module; ``--mutants 3,17`` runs only those numbers (the
survivors of an earlier run, after adding tests). ``--fork`` (POSIX) loads pytest,
its plugins and the module's third-party imports once and forks each mutant's
run from that process, evalrun imported afresh from the copy: several times less
CPU a mutant. Equivalent mutants (a change no test can see because the behaviour is the same)
exist; ``--show-survivors`` lists every survivor with its line so each can be
judged by hand.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_COMPARE_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                  ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BINOP_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div}


@dataclass(frozen=True)
class Mutant:
    index: int
    line: int
    what: str


class _Sites(ast.NodeVisitor):
    """Every place one change can be made, in a fixed order (so index N is the same mutant every time)."""

    def __init__(self) -> None:
        self.sites: list[tuple[ast.AST, str, int]] = []  # (node, kind, variant)
        self._in_annotation = 0

    def generic_visit(self, node: ast.AST) -> None:
        for field, value in ast.iter_fields(node):
            if field in ("annotation", "returns"):
                continue  # type annotations change nothing at run time
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        body = node.body[1:] if _is_docstring(node.body[0]) else node.body
        for stmt in body:
            if isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.If, ast.Raise)) and not _is_docstring(stmt):
                self.sites.append((stmt, "drop", 0))
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            self.sites.append((node, "return-none", 0))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE_SWAPS:
                self.sites.append((node, "compare", i))
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) in _BINOP_SWAPS:
            self.sites.append((node, "binop", 0))
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self.sites.append((node, "boolop", 0))
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self.sites.append((node, "not", 0))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, bool) or isinstance(node.value, (int, float)) or (
            isinstance(node.value, str) and node.value
        ):
            self.sites.append((node, "constant", 0))

    def visit_Expr(self, node: ast.Expr) -> None:
        if not _is_docstring(node):
            self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        pass


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _describe(node: ast.AST, kind: str, variant: int) -> str:
    if kind == "compare":
        op = node.ops[variant]  # type: ignore[attr-defined]
        return f"{type(op).__name__} -> {_COMPARE_SWAPS[type(op)].__name__}"
    if kind == "binop":
        return f"{type(node.op).__name__} -> {_BINOP_SWAPS[type(node.op)].__name__}"  # type: ignore[attr-defined]
    if kind == "boolop":
        return "and -> or" if isinstance(node.op, ast.And) else "or -> and"  # type: ignore[attr-defined]
    if kind == "constant":
        return f"constant {node.value!r} changed"  # type: ignore[attr-defined]
    if kind == "drop":
        return f"statement dropped: {ast.unparse(node).splitlines()[0][:60]}"
    return {"not": "not x -> x", "return-none": "return x -> return None"}[kind]


def _apply(tree: ast.Module, index: int) -> ast.Module:
    tree = copy.deepcopy(tree)
    finder = _Sites()
    finder.visit(tree)
    node, kind, variant = finder.sites[index]
    if kind == "compare":
        node.ops[variant] = _COMPARE_SWAPS[type(node.ops[variant])]()  # type: ignore[attr-defined]
    elif kind == "binop":
        node.op = _BINOP_SWAPS[type(node.op)]()  # type: ignore[attr-defined]
    elif kind == "boolop":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()  # type: ignore[attr-defined]
    elif kind == "not":
        _replace(tree, node, node.operand)  # type: ignore[attr-defined]
    elif kind == "constant":
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, bool):
            node.value = not value  # type: ignore[attr-defined]
        elif isinstance(value, int):
            node.value = value + 1  # type: ignore[attr-defined]
        elif isinstance(value, float):
            node.value = value * 2 if value else 1.0  # type: ignore[attr-defined]
        else:
            node.value = ""  # type: ignore[attr-defined]
    elif kind == "drop":
        _replace(tree, node, ast.Pass())
    elif kind == "return-none":
        node.value = ast.Constant(None)  # type: ignore[attr-defined]
    return ast.fix_missing_locations(tree)


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return


def mutants_of(path: Path) -> tuple[ast.Module, list[Mutant]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    finder = _Sites()
    finder.visit(tree)
    return tree, [Mutant(i, getattr(n, "lineno", 0), _describe(n, k, v)) for i, (n, k, v) in enumerate(finder.sites)]


def _function_spans(tree: ast.Module, names: set[str]) -> list[tuple[int, int]]:
    """The line spans of the functions called ``names``; SystemExit naming any not found."""
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names]
    missing = names - {n.name for n in found}
    if missing:
        raise SystemExit(f"mutate.py: no function {', '.join(sorted(missing))} in the module")
    return [(n.lineno, n.end_lineno or n.lineno) for n in found]


def _mutant_copy(module: Path, tree: ast.Module, mutant: Mutant, scratch: Path) -> Path:
    copy_root = scratch / "repo"
    shutil.copytree(REPO, copy_root, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", ".evalrun", ".hypothesis", ".pytest_cache", "node_modules"))
    (copy_root / module).write_text(ast.unparse(_apply(tree, mutant.index)), encoding="utf-8")
    return copy_root


def _run_one(module: Path, tree: ast.Module, mutant: Mutant, tests: list[str], timeout: float) -> str:
    with tempfile.TemporaryDirectory(prefix="evalrun-mutant-") as scratch:
        copy_root = _mutant_copy(module, tree, mutant, Path(scratch))
        env = {**os.environ, "PYTHONPATH": str(copy_root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pytest", *_PYTEST_ARGS, *tests],
                cwd=copy_root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            return "timeout"
        return "survived" if done.returncode == 0 else "killed"


_PYTEST_ARGS = ("-x", "-q", "-n", "0", "-p", "no:cacheprovider")


def _run_forked(module: Path, tree: ast.Module, mutants: list[Mutant], tests: list[str], timeout: float,
                jobs: int) -> list[str]:
    """``--fork``: pytest, its plugins and the module's imports are loaded once here, and each mutant
    runs in a forked child that imports evalrun afresh from its copy: the same verdicts, a fraction of the CPU."""
    import importlib
    import importlib.metadata

    import pytest  # noqa: F401

    for entry in importlib.metadata.entry_points(group="pytest11"):
        with contextlib.suppress(Exception):
            entry.load()
    importlib.import_module(".".join(module.with_suffix("").parts))
    outcomes: dict[int, str] = {}
    running: dict[int, tuple[int, str, float]] = {}  # pid -> (position, scratch folder, start)
    queue = list(enumerate(mutants))
    while queue or running:
        while queue and len(running) < jobs:
            position, mutant = queue.pop(0)
            scratch = tempfile.mkdtemp(prefix="evalrun-mutant-")
            copy_root = _mutant_copy(module, tree, mutant, Path(scratch))
            pid = os.fork()
            if pid == 0:
                _child(copy_root, tests)
            running[pid] = (position, scratch, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for child, (position, _, started) in running.items():
                if time.monotonic() - started > timeout and position not in outcomes:
                    outcomes[position] = "timeout"
                    with contextlib.suppress(OSError):
                        os.killpg(child, signal.SIGKILL)
            time.sleep(0.02)
            continue
        position, scratch, _ = running.pop(pid)
        shutil.rmtree(scratch, ignore_errors=True)
        if position not in outcomes:
            outcomes[position] = "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
    return [outcomes[i] for i in range(len(mutants))]


def _child(copy_root: Path, tests: list[str]) -> None:
    """A forked mutant run: its own session, the copy first on the path, evalrun not yet imported; never returns."""
    code = 99
    try:
        os.setsid()
        os.chdir(copy_root)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.environ["PYTHONPATH"] = str(copy_root) + os.pathsep + os.environ.get("PYTHONPATH", "")
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        sys.dont_write_bytecode = True
        sys.path.insert(0, str(copy_root))
        for name in [n for n in sys.modules if n == "evalrun" or n.startswith("evalrun.")]:
            del sys.modules[name]
        import pytest

        code = int(pytest.main([*_PYTEST_ARGS, *tests]))
    finally:
        os._exit(code)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path, help="the module to mutate, relative to the repository")
    parser.add_argument("tests", nargs="+", help="the test files (or node ids) that exercise it")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--show-survivors", action="store_true")
    parser.add_argument("--limit", type=int, default=0, help="only the first N mutants (a quick look)")
    parser.add_argument("--functions", default="", help="only these functions, comma-separated")
    parser.add_argument("--lines", default="", help="only the sites on lines FIRST-LAST")
    parser.add_argument("--mutants", default="", help="only these mutant numbers, comma-separated")
    parser.add_argument("--fork", action="store_true", help="fork each mutant's pytest from this process (POSIX)")
    args = parser.parse_args(argv)
    tree, mutants = mutants_of(REPO / args.module)
    if args.functions:
        spans = _function_spans(tree, set(args.functions.split(",")))
        mutants = [m for m in mutants if any(first <= m.line <= last for first, last in spans)]
    if args.lines:
        first, _, last = args.lines.partition("-")
        mutants = [m for m in mutants if int(first) <= m.line <= int(last or first)]
    if args.mutants:
        wanted = {int(n) for n in args.mutants.split(",")}
        mutants = [m for m in mutants if m.index in wanted]
    if args.limit:
        mutants = mutants[: args.limit]
    start = time.monotonic()
    if args.fork:
        outcomes = _run_forked(args.module, tree, mutants, args.tests, args.timeout, args.jobs)
    else:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(lambda m: _run_one(args.module, tree, m, args.tests, args.timeout), mutants))
    killed = sum(o != "survived" for o in outcomes)
    survived = [m for m, o in zip(mutants, outcomes) if o == "survived"]
    score = killed / len(mutants) if mutants else 1.0
    timed_out = sum(o == "timeout" for o in outcomes)
    print(f"{args.module}: {killed} of {len(mutants)} mutants killed ({score:.0%}; {timed_out} of them timed out); "
          f"{len(survived)} survived; {time.monotonic() - start:.0f} s")
    if args.show_survivors:
        for m in survived:
            print(f"  survived #{m.index} line {m.line}: {m.what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
