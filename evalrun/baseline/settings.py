"""Gate settings in the baseline: loosening the gate is a visible act.

Each tier's baseline records, per eval (per cell), the settings that decide
how hard its gate is: the tier, ``repeat``, ``min_pass_rate``, ``alpha``,
``stop``, the tier's ``skips`` policy, the probes it ``requires`` (its own and
its experiment's) and ``[baseline] strict`` (how they are spelled in the
file, its ``["/settings"]`` table: ``evalrun.baseline.format``). This module
holds the rules: which settings there are, what the manifest makes them, what
counts as loosening, and what an update records.

A run whose manifest sets any of them looser than recorded is a regression,
one line per loosened setting, until ``baseline --update`` writes the new
settings (so the pull request's diff shows them). Tightening is a stale note.
A baseline written before settings were recorded reads as "not recorded yet"
and compares no settings (no note: every baseline of an older evalrun would
turn stale, a regression under ``strict``); the next ``baseline --update``
records them. A settings table that lacks an eval it has checks for (a hand
edit) is a stale note for that eval.

What is looser: a lower ``repeat`` or ``min_pass_rate``; a lower ``alpha``
(a drop in pass rate is called a regression only when its p-value is below
``alpha``, so a smaller alpha calls fewer); ``stop = "decided"`` where it was
``"never"`` (fewer runs observed); ``skips = "skip"`` where it was
``"fail"``; a requirement added (one more way to skip); ``strict`` off;
``network = "host"``, ``require_isolation`` off, a name removed from
``[models] key_vars``, ``replay_match = "index"``, ``strict_replay`` off (the
tier's isolation and the ``[models]`` guards, recorded on every line; a line
an older evalrun wrote without them is "not recorded yet" (None) for those
five and compares none).
Flags of one invocation (``--strict-baseline``, ``--repeat``, ``--no-skips``)
are not recorded: the baseline cannot see a workflow file. Set them in the
manifest (``[baseline] strict = true``) to have them recorded and guarded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from evalrun.manifest import TIERS, Manifest
from evalrun.plan import cell_name
from evalrun.results import BaselineChange
from evalrun.text import quote

DEFAULT_FLOOR = 1.0
DEFAULT_ALPHA = 0.05


class GateSettings(NamedTuple):
    """One eval's gate settings, as the manifest makes them (tier defaults filled in)."""

    tier: str
    repeat: int = 1
    min_pass_rate: float = DEFAULT_FLOOR
    alpha: float = DEFAULT_ALPHA
    stop: str = "never"  # or "decided"
    skips: str = "skip"  # or "fail"
    requires: tuple[str, ...] = ()
    strict: bool = False
    too_little_data: str = "note"  # or "fail": a rate comparison that cannot tell is exit 4
    min_kappa: float | None = None  # an anchors eval's floors for its judge (evalrun.calibration)
    min_ac1: float | None = None
    # The guards; None: not recorded yet (a baseline of an older evalrun), nothing to compare.
    network: str | None = None  # "loopback" (t1/t2 isolated) or "host"
    require_isolation: bool | None = None  # cannot isolate: exit 2
    key_vars: tuple[str, ...] | None = None  # [models] key_vars: more keys kept out of t1/t2
    replay_match: str | None = None  # "request" (a changed request fails) or "index"
    strict_replay: bool | None = None  # a recorded call not requested fails the eval


def gate_settings(manifest: Manifest, tier: str) -> dict[str, GateSettings]:
    """Every cell of ``tier`` with its gate settings (skip-ruled cells included: they have none to loosen)."""
    out: dict[str, GateSettings] = {}
    tier_config = manifest.tier(tier)
    for spec in manifest.evals:
        if spec.tier != tier:
            continue

        def pick(key: str, default: Any) -> Any:
            value = getattr(spec, key)  # noqa: B023 - used at once
            if value is None:
                value = getattr(tier_config, key)
            return default if value is None else value

        # The cells by name (``plan.cells`` without the eval's folder: a resolve() is a stat per part, per eval).
        for experiment in manifest.columns(spec) or [None]:
            column = manifest.experiments[experiment].requires if experiment is not None else []
            out[cell_name(spec.name, experiment)] = GateSettings(
                tier=tier,
                repeat=pick("repeat", 1),
                min_pass_rate=float(pick("min_pass_rate", DEFAULT_FLOOR)),
                alpha=float(pick("alpha", DEFAULT_ALPHA)),
                stop=pick("stop", None) or "never",
                skips=tier_config.skips,
                requires=tuple(sorted(set(spec.requires) | set(column))),
                strict=manifest.baseline.strict,
                too_little_data=pick("too_little_data", "note"),
                min_kappa=spec.anchors.min_kappa if spec.anchors is not None else None,
                min_ac1=spec.anchors.min_ac1 if spec.anchors is not None else None,
                network=tier_config.network or ("host" if tier == "t3" else "loopback"),
                require_isolation=tier_config.require_isolation,
                key_vars=tuple(sorted({name for name in manifest.models.key_vars if name})),
                replay_match=manifest.models.replay_match,
                strict_replay=manifest.models.strict_replay,
            )
    return out


# --- comparing ----------------------------------------------------------------


def diff_settings(
    recorded: Mapping[str, GateSettings] | None,
    current: Mapping[str, GateSettings],
    names: Iterable[str],
    regressions: list[BaselineChange],
    stale: list[BaselineChange],
) -> None:
    """A ``loosened`` regression per loosened setting; a stale note for tightened or unrecorded settings.

    ``names``: the baselined evals of this run (in the baseline and in the results).
    """
    if recorded is None:
        return  # a baseline from before settings were recorded: the next update records them
    for name in names:
        now = current.get(name)
        if now is None:
            continue
        before = recorded.get(name)
        if before is None:
            stale.append(_change(name, "new-settings", f"{name}: gate settings not recorded in the baseline yet"))
            continue
        if before == now:
            continue
        tightened = False
        for key, looser, text in _compare(before, now):
            if looser:
                regressions.append(_change(name, "loosened", f"{name}: the gate was loosened: {text}"))
            else:
                tightened = True
        if tightened:
            changed = ", ".join(text for _key, looser, text in _compare(before, now) if not looser)
            stale.append(_change(name, "tightened", f"{name}: the gate was tightened: {changed}"))


def _compare(before: GateSettings, now: GateSettings) -> list[tuple[str, bool, str]]:
    """``(setting, looser?, words)`` for every setting that differs."""
    out: list[tuple[str, bool, str]] = []

    def number(key: str, lower_is_looser: bool = True) -> None:
        old, new = getattr(before, key), getattr(now, key)
        if old != new:
            out.append((key, (new < old) == lower_is_looser, f"{key} {_g(old)} -> {_g(new)}"))

    number("repeat")
    number("min_pass_rate")
    number("alpha")  # a smaller alpha calls fewer pass-rate drops regressions
    if before.stop != now.stop:
        out.append(("stop", now.stop != "never", f'stop "{before.stop}" -> "{now.stop}"'))
    if before.skips != now.skips:
        words = "a skip no longer fails" if now.skips == "skip" else "a skip now fails"
        out.append(("skips", now.skips == "skip", f'skips "{before.skips}" -> "{now.skips}" ({words})'))
    added = sorted(set(now.requires) - set(before.requires))
    removed = sorted(set(before.requires) - set(now.requires))
    for requirement in added:
        out.append(("requires", True, f"requires {quote(requirement)} now (one more way to skip)"))
    for requirement in removed:
        out.append(("requires", False, f"no longer requires {quote(requirement)}"))
    if before.strict != now.strict:
        out.append(("strict", not now.strict, f"[baseline] strict {str(before.strict).lower()} -> {str(now.strict).lower()}"))
    if before.too_little_data != now.too_little_data:
        out.append(("too_little_data", now.too_little_data == "note",
                    f'too_little_data "{before.too_little_data}" -> "{now.too_little_data}"'))
    for key in ("min_kappa", "min_ac1"):  # a judge's floor lowered or dropped lets a worse judge through
        old, new = getattr(before, key), getattr(now, key)
        if old != new:
            looser = new is None or (old is not None and new < old)
            out.append((key, looser, f"anchors {key} {_g(old) if old is not None else 'unset'} -> "
                                     f"{_g(new) if new is not None else 'unset'}"))
    # The tier's isolation and the [models] guards; a setting not recorded yet (None) is not compared.
    if before.network is not None and before.network != now.network:
        words = "scorers reach the network" if now.network == "host" else "scorers see only the loopback"
        out.append(("network", now.network == "host", f'network "{before.network}" -> "{now.network}" ({words})'))
    if before.require_isolation is not None and before.require_isolation != now.require_isolation:
        out.append(("require_isolation", not now.require_isolation,
                    f"require_isolation {str(before.require_isolation).lower()} -> "
                    f"{str(now.require_isolation).lower()}"
                    + (" (a run that cannot isolate only warns)" if not now.require_isolation else "")))
    if before.key_vars is not None and now.key_vars is not None:
        for name in sorted(set(before.key_vars) - set(now.key_vars)):
            out.append(("key_vars", True, f"[models] key_vars no longer holds {quote(name)} (its key reaches t1/t2 scorers)"))
        for name in sorted(set(now.key_vars) - set(before.key_vars)):
            out.append(("key_vars", False, f"[models] key_vars holds {quote(name)} now"))
    if before.replay_match is not None and before.replay_match != now.replay_match:
        words = " (a changed request no longer fails)" if now.replay_match == "index" else ""
        out.append(("replay_match", now.replay_match == "index",
                    f'[models] replay_match "{before.replay_match}" -> "{now.replay_match}"{words}'))
    if before.strict_replay is not None and before.strict_replay != now.strict_replay:
        words = " (a recorded call not requested no longer fails)" if not now.strict_replay else ""
        out.append(("strict_replay", not now.strict_replay,
                    f"[models] strict_replay {str(before.strict_replay).lower()} -> "
                    f"{str(now.strict_replay).lower()}{words}"))
    return out


def tier_move(name: str, from_tier: str, to_tier: str) -> tuple[bool, str]:
    """Whether moving ``name`` from ``from_tier`` to ``to_tier`` loosens its gate, and the words for it."""
    looser = TIERS.index(to_tier) > TIERS.index(from_tier) if from_tier in TIERS and to_tier in TIERS else True
    return looser, f"{name}: moved from {from_tier} to {to_tier}, a {'looser' if looser else 'stricter'} tier"


def _change(name: str, kind: str, message: str) -> BaselineChange:
    return BaselineChange(eval=name, check=None, kind=kind, message=message)


# --- updating -----------------------------------------------------------------


def updated_settings(
    old: Mapping[str, GateSettings] | None,
    current: Mapping[str, GateSettings],
    ran: Iterable[str],
    keep: Iterable[str],
) -> dict[str, GateSettings]:
    """The settings ``baseline --update`` records: today's for the evals this run planned, the old ones
    for the rest (a filtered update does not record another eval's loosened gate); only for ``keep``,
    the evals of the new baseline."""
    ran_set = set(ran)
    out: dict[str, GateSettings] = {}
    for name in sorted(keep):
        if name in ran_set and name in current:
            out[name] = current[name]
        elif old is not None and name in old:
            out[name] = old[name]
        elif name in current:
            out[name] = current[name]
    return out


def _g(value: float) -> str:
    return f"{value:g}"

