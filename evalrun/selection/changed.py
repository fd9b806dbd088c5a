"""Narrowing a plan to what changed: ``--changed-since REF``.

It takes a ``Plan`` (already narrowed by ``--eval``/``--tag``) and returns a
narrower one; what it leaves out joins ``filtered_out`` and what it did is
recorded in ``plan.filters``, so the results file, the baseline comparison and
``evalrun merge`` can all see it. Changed-only errs towards running more: a
change to the manifest, to evalrun's own code, or to files an eval declares in
``paths`` selects it.
"""

from __future__ import annotations

import os
import posixpath
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from evalrun.baseline import baseline_path, load_baseline
from evalrun.git import git_says, run_git, split_z
from evalrun.selection.checkout import repo_toplevel
from evalrun.errors import BaselineError, UsageError
from evalrun.manifest import Manifest
from evalrun.plan import Plan, tier_cells
from evalrun.workspace import FOLDER as WORKSPACE_FOLDER

FLAG = "--changed-since"
# Untracked droppings of running things, never a reason to select an eval.
_IGNORED_PARTS = ("__pycache__", WORKSPACE_FOLDER)


@dataclass(frozen=True)
class SelectionReason:
    """Why ``--changed-since`` kept or left out one planned eval (``reports_out.dry.selection_reason`` says it).

    ``kind``: ``manifest`` (the manifest changed: everything), ``own code`` (evalrun's own package changed:
    everything), ``folder`` (a file in the eval's folder), ``paths`` (a file its ``paths`` glob ``pattern``
    names), ``baseline`` (its entry in the changed baseline ``files[0]`` differs from ``ref``), ``baseline
    broken`` (that baseline changed and does not load), ``unchanged`` (left out).
    """

    eval: str
    selected: bool
    kind: str
    files: tuple[str, ...] = ()  # the changed files that decided it, relative to the manifest's folder
    ref: str = ""
    pattern: str | None = None


@dataclass(frozen=True)
class ChangedSelection:
    plan: Plan  # the narrowed plan
    reasons: list[SelectionReason]  # one per eval of the input plan, in plan order
    changed: list[str]  # every changed file, relative to the repository's top folder



# --- changed-only ------------------------------------------------------------


def changed_files(path: Path, ref: str) -> list[Path]:
    """Absolute paths of files that differ between ``ref`` and the working tree, untracked ones included.

    ``path`` is any file or folder inside the repository. Staged and unstaged
    changes both count; a deleted or renamed-away file is listed too.
    """
    return _changed_files(repo_toplevel(path.resolve(), FLAG), ref)


def _changed_files(top: Path, ref: str) -> list[Path]:
    commit = _resolve_ref(top, ref)
    diff = run_git(top, ["diff", "--name-only", "--no-renames", "-z", commit, "--"], FLAG)
    if diff.returncode != 0:
        raise UsageError(f"{FLAG} {ref}: git diff failed in {top} ({git_says(diff)}); check the repository")
    untracked = run_git(top, ["ls-files", "--others", "--exclude-standard", "-z"], FLAG)
    if untracked.returncode != 0:
        raise UsageError(f"{FLAG} {ref}: git ls-files failed in {top} ({git_says(untracked)}); check the repository")
    names = set(split_z(diff.stdout))
    names.update(n for n in split_z(untracked.stdout) if not set(n.split("/")) & set(_IGNORED_PARTS))
    return sorted(top / n for n in names)


def select_changed(plan: Plan, manifest: Manifest, ref: str, package_dir: Path | None) -> ChangedSelection:
    """Keep the planned evals touched by the changes since ``ref``; say why for each one.

    ``package_dir`` is evalrun's own package folder: when it lies inside the
    repository (evalrun developing itself, or vendored), a change there selects
    everything. So does a change to the manifest file.
    """
    top = repo_toplevel(manifest.path.resolve(), FLAG)
    changed = _changed_files(top, ref)
    changed_labels = [p.relative_to(top).as_posix() for p in changed]
    everything = _reason_for_everything(manifest, changed, package_dir, top)
    baseline_touched = _baseline_changes(manifest, changed, ref, top)
    reasons: list[SelectionReason] = []
    for planned in plan.evals:
        why = everything or _reason_for_eval(manifest, planned.spec.dir, planned.spec.paths, changed)
        why = why or baseline_touched.get(planned.name) or SelectionReason("", False, "unchanged")
        reasons.append(replace(why, eval=planned.name, ref=ref))
    kept = {r.eval for r in reasons if r.selected}
    unchanged = [p.name for p in plan.evals if p.name not in kept]
    narrowed = plan._replace(
        evals=[p for p in plan.evals if p.name in kept],
        filtered_out=[*plan.filtered_out, *unchanged],
        filters={**plan.filters, "changed_since": [ref], "unchanged": unchanged},
    )
    return ChangedSelection(plan=narrowed, reasons=reasons, changed=changed_labels)


def _resolve_ref(top: Path, ref: str) -> str:
    if not ref or ref.startswith("-"):
        raise UsageError(f"{FLAG} {ref!r}: not a git ref; pass a branch, tag or commit such as origin/main")
    proc = run_git(top, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], FLAG)
    if proc.returncode != 0:
        raise UsageError(
            f"{FLAG} {ref}: git does not know that ref in {top}; fetch it (a shallow CI clone needs the "
            f"history: fetch-depth 0) or pass a commit"
        )
    return proc.stdout.decode().strip()


def _reason_for_everything(manifest: Manifest, changed: list[Path], package_dir: Path | None,
                           top: Path) -> SelectionReason | None:
    manifest_file = manifest.path.resolve()
    if manifest_file in changed:
        return SelectionReason("", True, "manifest", _files(manifest, [manifest_file]))
    if package_dir is not None:
        package = package_dir.resolve()
        if package.is_relative_to(top):
            own = [p for p in changed if p.is_relative_to(package)]
            if own:
                return SelectionReason("", True, "own code", _files(manifest, own))
    return None


def _reason_for_eval(manifest: Manifest, folder: str, globs: list[str], changed: list[Path]) -> SelectionReason | None:
    eval_dir = (manifest.root / folder).resolve()
    inside = [p for p in changed if p.is_relative_to(eval_dir)]
    if inside:
        return SelectionReason("", True, "folder", _files(manifest, inside))
    for pattern in globs:
        regex = _glob_regex(pattern)
        hits = [p for p in changed if _matches(regex, _label(manifest, p))]
        if hits:
            return SelectionReason("", True, "paths", _files(manifest, hits), pattern=pattern)
    return None


def _baseline_changes(manifest: Manifest, changed: list[Path], ref: str, top: Path) -> dict[str, SelectionReason]:
    """Evals whose entry in a changed baseline file differs from ``ref``'s: the gate must recheck them."""
    touched: dict[str, SelectionReason] = {}
    for tier in manifest.tiers:
        path = baseline_path(manifest, tier).resolve()
        if path not in changed:
            continue
        label = (_label(manifest, path),)
        names = tier_cells(manifest, tier)  # an eval under experiments has one entry per column
        try:
            new = load_baseline(path) or {}
        except BaselineError:
            touched.update({n: SelectionReason("", True, "baseline broken", label) for n in names})
            continue
        old = _baseline_at(ref, path.relative_to(top), top)
        for name in names:
            if old is None or old.get(name) != new.get(name):
                touched[name] = SelectionReason("", True, "baseline", label)
    return touched


def _baseline_at(ref: str, rel: Path, top: Path) -> dict[str, object] | None:
    """The baseline as committed at ``ref``; {} when it did not exist, None when unreadable."""
    proc = run_git(top, ["show", f"{ref}:{rel.as_posix()}"], FLAG)
    if proc.returncode != 0:
        return {}
    try:
        return tomllib.loads(proc.stdout.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob relative to the manifest: ``*`` and ``?`` stay in one folder, ``**`` spans folders."""
    norm = posixpath.normpath(pattern.replace("\\", "/")).lstrip("/") if pattern not in ("", ".") else "."
    parts = norm.split("/")
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment_regex(part) + ("" if last else "/"))
    return re.compile("".join(out))


def _segment_regex(part: str) -> str:
    out, i = [], 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and "]" in part[i + 2 :]:
            end = part.index("]", i + 2)
            body = part[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _matches(regex: re.Pattern[str], rel: str) -> bool:
    # A glob naming a folder ("lib" or "lib/*") covers every file below it.
    candidate = rel
    while candidate and candidate != ".":
        if regex.fullmatch(candidate):
            return True
        candidate = posixpath.dirname(candidate)
    return False


def _files(manifest: Manifest, paths: list[Path]) -> tuple[str, ...]:
    return tuple(_label(manifest, p) for p in paths)


def _label(manifest: Manifest, path: Path) -> str:
    """``path`` relative to the manifest's folder, with forward slashes (``..`` when outside it)."""
    return Path(os.path.relpath(path, manifest.root)).as_posix()
