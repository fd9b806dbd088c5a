"""The rules of a manifest that span several fields, each broken one a ``ManifestError`` of one line.

A manifest that fits its shape (``evalrun.manifest.schema``) may still be
wrong as a whole: an eval's tier or folder that does not exist, a t1 eval that
uses a service or a model, a provider key handed to t1/t2, two evals that
would record into one replay session. ``check_rules`` says which, naming the
file, the place and the fix, as ``evalrun.manifest.load`` does for the shape.
"""

from __future__ import annotations

import re
from pathlib import Path

from evalrun.errors import ManifestError
from evalrun.manifest.schema import TIERS, EvalSpec, ExperimentList, Manifest
from evalrun.probes.spec import SERVICE_KINDS, parse_requirement
from evalrun.secrets import key_vars
from evalrun.services.spec import check_exports


def check_rules(label: str, manifest: Manifest) -> None:
    """The rules across fields of a manifest that fits its shape; the first broken one is a one-line ``ManifestError``."""
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
        if spec.fixtures_for is not None and not manifest.uses_model(spec):
            # Without the proxy the eval records and replays nothing: the line would be silently inert.
            why = "t1 makes no model calls" if spec.tier == "t1" else "its model calls do not go through evalrun"
            raise ManifestError(
                f"{where}.fixtures_for: {why}, so it records no fixtures; "
                + ("remove fixtures_for" if spec.tier == "t1" else f"add model = true (or [tiers.{spec.tier}] model = true), or remove fixtures_for")
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
    recording = [(i, spec) for i, spec in enumerate(manifest.evals) if spec.tier != "t1" and manifest.uses_model(spec)]
    if not recording:
        return
    from evalrun.models.replay.fixtures import default_session  # the proxy's own folding: only for evals that call models

    owners: dict[tuple[Path, str], tuple[int, str]] = {}
    by_name = {spec.name: spec for spec in manifest.evals}
    for index, spec in recording:
        owner = by_name.get(spec.fixtures_for or spec.name, spec)
        key = (manifest.eval_dir(owner), default_session(owner.name))  # eval_dir is resolved already
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
            if target.is_dir():
                raise ManifestError(f"{at}.replace: {relative!r} is a folder; a bite replaces one file, name a file in it")
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
