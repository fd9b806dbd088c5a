"""Gate settings in the baseline: loosening the gate is a visible act.

Each tier's baseline records, per eval (per cell), the settings that decide
how hard its gate is: the tier, ``repeat``, ``min_pass_rate``, ``alpha``,
``stop``, the tier's ``skips`` policy, the probes it ``requires`` (its own and
its experiment's) and ``[baseline] strict``. They live in one table whose
name no eval can have (eval names hold no ``/``), written first::

    ["/settings"]
    rls-isolation = { tier = "t2", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "skip", requires = [], strict = false }

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
tier's isolation and the ``[models]`` guards, GUARD_KEYS, written on every line;
a line without them is "not recorded yet" for those five and compares none).
Flags of one invocation (``--strict-baseline``, ``--repeat``, ``--no-skips``)
are not recorded: the baseline cannot see a workflow file. Set them in the
manifest (``[baseline] strict = true``) to have them recorded and guarded.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalrun.errors import BaselineError
from evalrun.manifest import TIERS, Manifest
from evalrun.plan import cell_name
from evalrun.results import BaselineChange
from evalrun.text import quote

SETTINGS_TABLE = "/settings"  # no eval or cell name holds "/"
SETTINGS_KEYS = ("tier", "repeat", "min_pass_rate", "alpha", "stop", "skips", "requires", "strict")
# Written only when set (a baseline of an evalrun that knew none of them still reads the same).
OPTIONAL_KEYS = ("too_little_data", "min_kappa", "min_ac1")
# The tier's isolation and the manifest's [models] guards, written on every line by this evalrun; a line
# without them (an older evalrun wrote it) has them "not recorded yet": compared once an update records them.
GUARD_KEYS = ("network", "require_isolation", "key_vars", "replay_match", "strict_replay")
DEFAULT_FLOOR = 1.0
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class GateSettings:
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
    # GUARD_KEYS; None: not recorded yet (a baseline of an older evalrun), nothing to compare.
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


# --- the written form ---------------------------------------------------------


def settings_line(key: str, settings: GateSettings) -> str:
    """One line of the settings table; ``key`` is already a TOML key."""
    requires = ", ".join(_toml_string(r) for r in settings.requires)
    return (
        f"{key} = {{ tier = {_toml_string(settings.tier)}, repeat = {settings.repeat}, "
        f"min_pass_rate = {_toml_float(settings.min_pass_rate)}, alpha = {_toml_float(settings.alpha)}, "
        f"stop = {_toml_string(settings.stop)}, skips = {_toml_string(settings.skips)}, "
        f"requires = [{requires}], strict = {'true' if settings.strict else 'false'}"
        + (f', too_little_data = "{settings.too_little_data}"' if settings.too_little_data != "note" else "")
        + (f", min_kappa = {_toml_float(settings.min_kappa)}" if settings.min_kappa is not None else "")
        + (f", min_ac1 = {_toml_float(settings.min_ac1)}" if settings.min_ac1 is not None else "")
        + _guards_part(settings)
        + " }"
    )


def _guards_part(settings: GateSettings) -> str:
    """The GUARD_KEYS, all or none (a line read from an older baseline has none)."""
    if None in (settings.network, settings.require_isolation, settings.key_vars, settings.replay_match,
                settings.strict_replay):
        return ""
    key_vars = ", ".join(_toml_string(k) for k in settings.key_vars or ())
    return (
        f", network = {_toml_string(settings.network or '')}, "
        f"require_isolation = {'true' if settings.require_isolation else 'false'}, key_vars = [{key_vars}], "
        f"replay_match = {_toml_string(settings.replay_match or '')}, "
        f"strict_replay = {'true' if settings.strict_replay else 'false'}"
    )


def _toml_float(value: float) -> str:
    text = repr(float(value))
    return text if ("." in text or "e" in text) else text + ".0"


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


# The fast reader's grammar: exactly what ``settings_line`` writes. Anything else goes to tomllib.
TOML_BASIC = r'"((?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\["\\bfnrt]|\\u[0-9A-Fa-f]{4})*)"'  # a basic string, its body a group
_BASIC = TOML_BASIC
_PLAIN_BASIC = r'"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\["\\bfnrt]|\\u[0-9A-Fa-f]{4})*"'
_FLOAT = r"((?:0|[1-9][0-9]*)(?:\.[0-9]+(?:e[+-]?[0-9]+)?|e[+-]?[0-9]+))"
_SIGNED_FLOAT = "(-?" + _FLOAT[1:]
_INT = r"(0|[1-9][0-9]{0,17})"


@functools.cache
def _settings_entry() -> re.Pattern[str]:
    """The written form's pattern, compiled when a baseline's settings are first read (about 1.4 ms: a run
    without a baseline, or whose baseline records no settings, never pays it)."""
    return re.compile(
        r"(?:([A-Za-z0-9_-]+)|" + _BASIC + r") = \{ tier = " + _BASIC + r", repeat = " + _INT
        + r", min_pass_rate = " + _FLOAT + r", alpha = " + _FLOAT + r", stop = " + _BASIC + r", skips = " + _BASIC
        + r", requires = \[((?:" + _PLAIN_BASIC + r"(?:, " + _PLAIN_BASIC + r")*)?)\], strict = (true|false)"
        + r'(?:, too_little_data = "(fail)")?(?:, min_kappa = ' + _SIGNED_FLOAT + r")?(?:, min_ac1 = " + _SIGNED_FLOAT
        + r")?(?:, network = \"(loopback|host)\", require_isolation = (true|false), key_vars = \[((?:" + _PLAIN_BASIC
        + r"(?:, " + _PLAIN_BASIC + r")*)?)\], replay_match = \"(request|index)\", strict_replay = (true|false))? \}\Z"
    )


_STRING_IN_LIST = re.compile(_BASIC)


def read_settings_entry(line: str) -> tuple[str, dict[str, Any]] | None:
    """``(eval, the table tomllib would read)`` for a line of the written form, else None."""
    match = _settings_entry().match(line)
    if match is None:
        return None
    (bare, quoted, tier, repeat, floor, alpha, stop, skips, requires, strict, little, kappa, ac1,
     network, isolation, key_vars, replay_match, strict_replay) = match.groups()
    key = bare if bare is not None else _unescape(quoted)
    optional: dict[str, Any] = {}
    if little is not None:
        optional["too_little_data"] = little
    if kappa is not None:
        optional["min_kappa"] = float(kappa)
    if ac1 is not None:
        optional["min_ac1"] = float(ac1)
    if network is not None:
        optional.update(network=network, require_isolation=isolation == "true",
                        key_vars=[_unescape(m.group(1)) for m in _STRING_IN_LIST.finditer(key_vars)],
                        replay_match=replay_match, strict_replay=strict_replay == "true")
    return key, {
        "tier": _unescape(tier),
        "repeat": int(repeat),
        "min_pass_rate": float(floor),
        "alpha": float(alpha),
        "stop": _unescape(stop),
        "skips": _unescape(skips),
        "requires": [_unescape(m.group(1)) for m in _STRING_IN_LIST.finditer(requires)],
        "strict": strict == "true",
        **optional,
    }


def _unescape(body: str) -> str:
    return json.loads(f'"{body}"') if "\\" in body else body


# --- validating (what tomllib read) -------------------------------------------


def parse_settings_table(label: str, table: Any, fix: str) -> dict[str, GateSettings]:
    """The ``["/settings"]`` table -> settings per eval; a one-line ``BaselineError`` otherwise."""
    where = f'{label}: ["{SETTINGS_TABLE}"]'
    if not isinstance(table, dict):
        raise BaselineError(f"{where}: must be a table of eval = {{ tier = ..., repeat = ..., ... }}; {fix}")
    return {name: parse_settings_entry(f"{where} {quote(name)}", value, fix) for name, value in table.items()}


def parse_settings_entry(where: str, value: Any, fix: str) -> GateSettings:
    if not isinstance(value, dict):
        raise BaselineError(f"{where}: must be an inline table {{ tier = ..., repeat = ..., ... }}; {fix}")
    unknown = sorted(set(value) - set(SETTINGS_KEYS) - set(OPTIONAL_KEYS) - set(GUARD_KEYS))
    if unknown:
        known = ", ".join((*SETTINGS_KEYS, *OPTIONAL_KEYS, *GUARD_KEYS))
        raise BaselineError(f"{where}: unknown setting {unknown[0]!r}; known: {known}; {fix}")
    missing = [k for k in SETTINGS_KEYS if k not in value]
    if missing:
        raise BaselineError(f"{where}: missing setting {missing[0]!r}; {fix}")

    def bad(key: str, want: str) -> BaselineError:
        return BaselineError(f"{where}: {key} must be {want}, got {value[key]!r}; {fix}")

    if value["tier"] not in TIERS:
        raise bad("tier", "one of " + ", ".join(TIERS))
    repeat = value["repeat"]
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise bad("repeat", "an integer >= 1")
    numbers = {}
    for key, low, high in (("min_pass_rate", 0.0, 1.0), ("alpha", 0.0, 1.0)):
        number = value[key]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) \
                or not low <= number <= high:
            raise bad(key, f"a number from {low:g} to {high:g}")
        numbers[key] = float(number)
    if value["stop"] not in ("never", "decided"):
        raise bad("stop", '"never" or "decided"')
    if value["skips"] not in ("skip", "fail"):
        raise bad("skips", '"skip" or "fail"')
    requires = value["requires"]
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise bad("requires", "an array of strings")
    if not isinstance(value["strict"], bool):
        raise bad("strict", "true or false")
    if value.get("too_little_data", "note") not in ("note", "fail"):
        raise bad("too_little_data", '"note" or "fail"')
    floors: dict[str, float | None] = {}
    for key in ("min_kappa", "min_ac1"):
        number = value.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))
                                   or not math.isfinite(number) or not -1 <= number <= 1):
            raise bad(key, "a number from -1 to 1")
        floors[key] = None if number is None else float(number)
    if value.get("network", "host") not in ("loopback", "host"):
        raise bad("network", '"loopback" or "host"')
    for key in ("require_isolation", "strict_replay"):
        if key in value and not isinstance(value[key], bool):
            raise bad(key, "true or false")
    key_vars = value.get("key_vars")
    if key_vars is not None and (not isinstance(key_vars, list) or not all(isinstance(k, str) for k in key_vars)):
        raise bad("key_vars", "an array of strings")
    if value.get("replay_match", "index") not in ("request", "index"):
        raise bad("replay_match", '"request" or "index"')
    return GateSettings(
        tier=value["tier"], repeat=repeat, min_pass_rate=numbers["min_pass_rate"], alpha=numbers["alpha"],
        stop=value["stop"], skips=value["skips"], requires=tuple(sorted(set(requires))), strict=value["strict"],
        too_little_data=value.get("too_little_data", "note"), **floors,
        network=value.get("network"), require_isolation=value.get("require_isolation"),
        key_vars=None if key_vars is None else tuple(sorted(set(key_vars))),
        replay_match=value.get("replay_match"), strict_replay=value.get("strict_replay"),
    )


def _g(value: float) -> str:
    return f"{value:g}"

