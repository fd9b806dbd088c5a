"""``evalrun dry``: print the planned runs and run no scorer."""

from __future__ import annotations

import shlex
from pathlib import Path

from evalrun.console import Console
from evalrun.errors import ExitCode
from evalrun.commands.run import load_checked_manifest
from evalrun.plan import make_plan


def dry(manifest_path: Path, tier: str | None, evals: list[str], tags: list[str], console: Console) -> int:
    manifest = load_checked_manifest(manifest_path)
    plan = make_plan(manifest, tier, evals, tags)
    scope = tier or "all tiers"
    if not plan.evals:
        console.warn(f"nothing selected to run in {scope}")
        return int(ExitCode.NOTHING_SELECTED)
    console.line(f"planned in {scope}: {len(plan.evals)} eval{'s' if len(plan.evals) != 1 else ''} (nothing is run)")
    for p in plan.evals:
        s = p.spec
        argv = " ".join(s.run) if s.shell else shlex.join(s.run)
        console.line(f"{s.name}")
        console.line(f"  tier {s.tier}, dir {s.dir}, timeout {s.timeout:g} s, tags {', '.join(s.tags) or '-'}")
        console.line(f"  run: {argv}" + ("  (shell)" if s.shell else ""))
        if s.requires:
            console.line(f"  requires: {', '.join(s.requires)}")
    if plan.filtered_out:
        console.line(f"filtered out: {', '.join(plan.filtered_out)}")
    return int(ExitCode.OK)
