"""Loosening the gate is a visible act: each eval's gate settings live in its baseline.

A manifest edit that loosens an eval's gate (a lower floor, fewer repeats, a
lower alpha, early stops, skips no longer failing, one more requirement,
``[baseline] strict`` off, a move to a looser tier) exits 3, one line per
loosened setting, until ``baseline --update`` records it; tightening passes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import eval_entry, json_scorer
from evalrun.baseline import load_baseline, write_baseline
from evalrun.baseline.format import (
    _settings_entry, _settings_pieces, read_whole_written_form, read_written_form, settings_line, toml_key)
from evalrun.baseline.settings import GateSettings

# --- the written form, read fast and by tomllib alike --------------------------------

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20).filter(lambda n: "/" not in n)
floats = st.one_of(st.floats(0, 1, allow_nan=False), st.sampled_from([0.0, 1.0, 0.05, 1e-05, 0.8]))
gate = st.builds(
    GateSettings,
    tier=st.sampled_from(["t1", "t2", "t3"]),
    repeat=st.integers(1, 10**6),
    min_pass_rate=floats,
    alpha=floats,
    stop=st.sampled_from(["never", "decided"]),
    skips=st.sampled_from(["skip", "fail"]),
    requires=st.lists(names, max_size=3, unique=True).map(lambda r: tuple(sorted(r))),
    strict=st.booleans(),
    too_little_data=st.sampled_from(["note", "fail"]),
    min_kappa=st.one_of(st.none(), st.floats(-1, 1, allow_nan=False)),
    min_ac1=st.one_of(st.none(), st.floats(-1, 1, allow_nan=False)),
    # the guards, drawn whole below (builds would fill a NamedTuple's defaulted fields with anything of their type)
    **dict.fromkeys(("network", "require_isolation", "key_vars", "replay_match", "strict_replay"), st.none()),
)
guards = st.one_of(
    st.just({}),  # a line an older evalrun wrote: the guards not recorded yet
    st.fixed_dictionaries({
        "network": st.sampled_from(["loopback", "host"]),
        "require_isolation": st.booleans(),
        "key_vars": st.lists(names, max_size=3, unique=True).map(lambda k: tuple(sorted(k))),
        "replay_match": st.sampled_from(["request", "index"]),
        "strict_replay": st.booleans(),
    }),
)
gate = st.tuples(gate, guards).map(lambda pair: pair[0]._replace(**pair[1]))
counts = st.dictionaries(names, st.dictionaries(names, st.integers(0, 10**12), max_size=3), max_size=4)


def _as_toml_table(s: GateSettings) -> dict:
    optional = {"too_little_data": s.too_little_data} if s.too_little_data != "note" else {}
    optional.update({k: getattr(s, k) for k in ("min_kappa", "min_ac1") if getattr(s, k) is not None})
    if s.network is not None:
        optional.update(network=s.network, require_isolation=s.require_isolation, key_vars=list(s.key_vars),
                        replay_match=s.replay_match, strict_replay=s.strict_replay)
    return {"tier": s.tier, "repeat": s.repeat, "min_pass_rate": s.min_pass_rate, "alpha": s.alpha, "stop": s.stop,
            "skips": s.skips, "requires": list(s.requires), "strict": s.strict, **optional}


@settings(max_examples=100, deadline=None)
@given(counts, st.data())
def test_settings_written_are_toml_and_the_fast_readers_read_them_as_tomllib_does(tmp_path_factory, data, draw) -> None:
    recorded = {name: draw.draw(gate) for name in data} if data else draw.draw(st.dictionaries(names, gate, max_size=3))
    path = Path(tmp_path_factory.mktemp("b")) / "t1.toml"
    write_baseline(path, data, "evalrun baseline --update t1", recorded)
    text = path.read_text(encoding="utf-8")
    expected = {**data, **({"/settings": {n: _as_toml_table(s) for n, s in recorded.items()}} if recorded else {})}
    assert tomllib.loads(text) == expected
    assert read_written_form(text) == expected  # the fast readers take it, no fallback
    assert read_whole_written_form(text) == expected
    loaded = load_baseline(path)
    assert loaded == data
    assert loaded.settings == (recorded or None)


_LINES = [
    '["/settings"]', "[a]", 'x = 1',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false }',
    '"b c" = { tier = "t2", repeat = 3, min_pass_rate = 0.8, alpha = 1e-05, stop = "decided", skips = "skip", requires = ["env:K", "tcp:\\u0041"], strict = true }',
    'a = { tier = "t1", repeat = 01, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = ["x",], strict = false }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = False }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false, too_little_data = "fail", min_kappa = -0.5 }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false, min_ac1 = 0.6 }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false, min_kappa = 1 }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false, network = "host", require_isolation = false, key_vars = ["K", "\\u004b"], replay_match = "index", strict_replay = true }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false, network = "host", key_vars = [], replay_match = "index", strict_replay = true }',
    'a = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", skips = "fail", requires = [], strict = false, min_kappa = -1.0, network = "wide", require_isolation = false, key_vars = [], replay_match = "index", strict_replay = true }',
    "", "# note",
]
line_parts = st.lists(
    st.sampled_from(_LINES),
    max_size=8,
)


@settings(max_examples=400, deadline=None)
@given(line_parts, st.text(max_size=5))
def test_the_fast_readers_never_accept_a_settings_table_tomllib_reads_differently(lines, tail) -> None:
    text = "\n".join(lines) + tail
    for reader in (read_written_form, read_whole_written_form):
        fast = reader(text)
        if fast is None:
            continue  # tomllib decides
        assert tomllib.loads(text) == fast


def _by_pattern(line: str) -> tuple | None:
    match = _settings_entry().match(line)
    return None if match is None else match.groups()


_SETTINGS_LINES = [part for part in _LINES if " = { " in part]
assert len(_SETTINGS_LINES) == 12
_GOOD = _SETTINGS_LINES[0]
_SETTINGS_LINES += [  # one piece wrong each (the reader must refuse what the pattern refuses, no more, no less)
    _GOOD.replace("min_pass_rate = 1.0", "min_pass_rate = -1.0"),
    _GOOD.replace("alpha = 0.05", "alpha = -0.05"),
    _GOOD.replace("alpha = 0.05", "alpha = 5e-2"),
    _GOOD.replace("alpha = 0.05", "alpha = .05"),
    _GOOD.replace("alpha = 0.05", "alpha = 1.e5"),
    _GOOD.replace("repeat = 1", "repeat = 1234567890123456789"),
    _GOOD.replace("repeat = 1", "repeat = 123456789012345678"),
    _GOOD.replace("repeat = 1", "repeat = 0"),
    _GOOD.replace("repeat = 1", "repeat = -1"),
    _GOOD.replace("strict = false }", "strict = false, min_kappa = -0 }"),
    _GOOD.replace("strict = false }", "strict = false, min_ac1 = 1e-5, min_kappa = 0.5 }"),
    _GOOD.replace("strict = false }", 'strict = false, too_little_data = "note" }'),
    _GOOD.replace("strict = false }", "strict = false }\n"),
    _GOOD.replace("a = {", '"a\\"b" = {'),
    _GOOD.replace("a = {", '"a\\q" = {'),
    _GOOD.replace('tier = "t1"', 'tier = "t\\u0031"'),
    _GOOD.replace("requires = []", 'requires = ["a", "b"]'),
    _GOOD.replace("requires = []", 'requires = ["a" , "b"]'),
    _GOOD.replace("requires = []", 'requires = ["a"'),
]
_EDITS = st.tuples(st.one_of(st.integers(0, 80), st.integers(0, 400)), st.integers(0, 3),
                   st.sampled_from(['"', "\\", " ", ",", "-", "0", "1", "e", "]", "[", "}", "x", "\\u0041", "\t", "é"]))


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.sampled_from(_SETTINGS_LINES), st.tuples(names, gate).map(lambda p: settings_line(toml_key(p[0]), p[1]))),
       st.lists(_EDITS, max_size=3))
def test_the_settings_line_read_piece_by_piece_is_the_whole_line_pattern(line: str, edits: list) -> None:
    # A run's first settings lines are matched piece by piece (no 1 ms compile of the whole pattern): the same
    # groups, or None, for every line the writer makes and for every small edit of one.
    for at, cut, text in edits:
        at = min(at, len(line))
        line = line[:at] + text + line[at + cut :]
    assert _settings_pieces(line) == _by_pattern(line), line


def test_the_piecewise_reader_reads_what_the_writer_writes() -> None:
    line = settings_line("a", GateSettings(tier="t1", repeat=3, min_pass_rate=0.8, alpha=1e-05, stop="never", skips="skip",
                                           requires=("env:K", 'q"uote'), strict=True, min_kappa=-0.5,
                                           network="loopback", require_isolation=True, key_vars=("K",),
                                           replay_match="request", strict_replay=False))
    assert _settings_pieces(line) == _by_pattern(line) == (
        "a", None, "t1", "3", "0.8", "1e-05", "never", "skip", '"env:K", "q\\"uote"', "true", None, "-0.5", None,
        "loopback", "true", '"K"', "request", "false")


def test_a_baseline_without_settings_still_reads_and_records_none(tmp_path: Path) -> None:
    path = tmp_path / "t1.toml"
    path.write_text('# generated by evalrun\n[a]\n"x" = 1\n')
    loaded = load_baseline(path)
    assert loaded == {"a": {"x": 1}} and loaded.settings is None


def test_a_bad_settings_entry_is_one_line_naming_the_file_the_eval_and_the_setting(tmp_path: Path) -> None:
    import pytest

    from evalrun.errors import BaselineError

    path = tmp_path / "t1.toml"
    path.write_text('["/settings"]\na = { tier = "t1", repeat = 0 }\n[a]\nx = 1\n')
    with pytest.raises(BaselineError) as caught:
        load_baseline(path)
    assert "t1.toml" in str(caught.value) and '"a"' in str(caught.value) and "missing setting" in str(caught.value)
    path.write_text('["/settings"]\na = { tier = "t1", repeat = 0, min_pass_rate = 1.0, alpha = 0.05, stop = "never", '
                    'skips = "fail", requires = [], strict = false }\n[a]\nx = 1\n')
    with pytest.raises(BaselineError, match="repeat must be an integer >= 1"):
        load_baseline(path)


# --- through the CLI ------------------------------------------------------------------------

PASSING = json_scorer([{"name": "x", "assertions": 1, "passed": True}])


def _project(project, extra: str = "", tier_tables: str = "", tier: str = "t1", more: str = ""):
    manifest = tier_tables + eval_entry("a", tier=tier, extra=extra) + eval_entry("b") + more
    proj = project({"manifest.toml": manifest, "evals/a/score.py": PASSING, "evals/b/score.py": PASSING})
    assert proj.run("baseline", "--update", "t1", env={"SOME_VAR": "1"}).code == 0
    return proj


def _edit(proj, old: str, new: str) -> None:
    path = proj.root / "manifest.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_lowering_a_floor_exits_3_until_the_baseline_is_updated_and_the_update_shows_in_the_file(project) -> None:
    proj = _project(project, extra="min_pass_rate = 1.0\n")
    assert "min_pass_rate = 1.0" in (proj.root / "baselines/t1.toml").read_text()
    _edit(proj, "min_pass_rate = 1.0", "min_pass_rate = 0.5")
    r = proj.run("t1")
    assert r.code == 3, r.output
    assert "regression: a: the gate was loosened: min_pass_rate 1 -> 0.5" in r.out
    assert "a looser gate must be committed in the baseline" in r.out
    assert [c["kind"] for c in proj.results()["baseline"]["regressions"]] == ["loosened"]
    assert proj.run("baseline", "--update", "t1").code == 0
    assert "min_pass_rate = 0.5" in (proj.root / "baselines/t1.toml").read_text()  # in the pull request's diff
    assert proj.run("t1").code == 0


def test_each_loosened_setting_is_one_line(project) -> None:
    proj = _project(project, extra="repeat = 3\nalpha = 0.05\n", tier_tables='[tiers.t1]\nskips = "fail"\n\n[baseline]\nstrict = true\n\n')
    _edit(proj, "repeat = 3\nalpha = 0.05", 'repeat = 2\nalpha = 0.01\nstop = "decided"\nrequires = ["env:SOME_VAR"]')
    _edit(proj, 'skips = "fail"', 'skips = "skip"')
    _edit(proj, "strict = true", "strict = false")
    r = proj.run("t1", env={"SOME_VAR": "1"})
    assert r.code == 3, r.output
    lines = [ln for ln in r.out.splitlines() if ln.startswith("regression: a: the gate was loosened")]
    assert [ln.split("loosened: ")[1] for ln in lines] == [
        "repeat 3 -> 2",
        "alpha 0.05 -> 0.01",
        'stop "never" -> "decided"',
        'skips "fail" -> "skip" (a skip no longer fails)',
        'requires "env:SOME_VAR" now (one more way to skip)',
        "[baseline] strict true -> false",
    ]
    assert sum("regression: b: the gate was loosened" in ln for ln in r.out.splitlines()) == 2  # skips, strict


def test_tightening_passes_with_a_stale_note(project) -> None:
    proj = _project(project, extra='min_pass_rate = 0.5\nrequires = ["env:SOME_VAR"]\n')
    _edit(proj, 'min_pass_rate = 0.5\nrequires = ["env:SOME_VAR"]', "min_pass_rate = 0.9")
    r = proj.run("t1", env={"SOME_VAR": "1"})
    assert r.code == 0, r.output
    assert "a: the gate was tightened: min_pass_rate 0.5 -> 0.9, no longer requires \"env:SOME_VAR\"" in r.out
    assert proj.run("t1", "--strict-baseline").code == 3  # strict: every change must be committed


def test_moving_an_eval_to_a_looser_tier_is_a_regression_that_says_so(project) -> None:
    proj = _project(project, more="[tiers.t1]\n[tiers.t3]\n")
    _edit(proj, 'name = "a"\ntier = "t1"', 'name = "a"\ntier = "t3"')
    r = proj.run("t1")
    assert r.code == 3, r.output
    assert "regression: a: moved from t1 to t3, a looser tier (baseline of t1: 1 check)" in r.out
    assert "eval vanished" not in r.out


def test_moving_an_eval_to_a_stricter_tier_is_a_note_in_the_tier_it_left(project) -> None:
    proj = project({
        "manifest.toml": "[tiers.t1]\n[tiers.t2]\n" + eval_entry("a", tier="t2") + eval_entry("b"),
        "evals/a/score.py": PASSING, "evals/b/score.py": PASSING,
    })
    assert proj.run("baseline", "--update", "t2").code == 0
    _edit(proj, 'name = "a"\ntier = "t2"', 'name = "a"\ntier = "t1"')
    r = proj.run("t2")
    assert r.code == 5, r.output  # nothing left in t2 to run; no regression
    assert "a: moved from t2 to t1, a stricter tier" in r.out
    assert "regression" not in r.out


def test_a_baseline_written_before_settings_compares_none_and_the_next_update_records_them(project) -> None:
    proj = _project(project, extra="min_pass_rate = 1.0\n")
    path = proj.root / "baselines/t1.toml"
    text = path.read_text()
    path.write_text(text.split('["/settings"]')[0] + text.split("\n\n", 1)[1])  # as an older evalrun wrote it
    assert "/settings" not in path.read_text()
    _edit(proj, "min_pass_rate = 1.0", "min_pass_rate = 0.5")
    r = proj.run("t1", "--strict-baseline")
    assert r.code == 0, r.output  # not recorded yet: nothing to compare, not even under strict
    assert proj.run("baseline", "--update", "t1").code == 0
    assert "min_pass_rate = 0.5" in path.read_text()


def test_a_filtered_update_keeps_the_other_evals_recorded_settings(project) -> None:
    proj = _project(project, extra="min_pass_rate = 1.0\n")
    _edit(proj, 'dir = "evals/b"', 'dir = "evals/b"\nmin_pass_rate = 0.1')
    _edit(proj, "min_pass_rate = 1.0", "min_pass_rate = 0.9")
    assert proj.run("baseline", "--update", "t1", "--eval", "a").code == 0
    r = proj.run("t1")
    assert r.code == 3, r.output  # b's loosening was not recorded by an update that did not run b
    assert "regression: b: the gate was loosened: min_pass_rate 1 -> 0.1" in r.out
    assert "regression: a:" not in r.out


def test_the_judge_floors_and_too_little_data_are_gate_settings_too(project) -> None:
    proj = _project(project, extra='too_little_data = "fail"\nanchors = { min_kappa = 0.6, min_ac1 = 0.5 }\n')
    text = (proj.root / "baselines/t1.toml").read_text()
    assert 'strict = false, too_little_data = "fail", min_kappa = 0.6, min_ac1 = 0.5, network = "loopback"' in text
    _edit(proj, 'too_little_data = "fail"\nanchors = { min_kappa = 0.6, min_ac1 = 0.5 }',
          'too_little_data = "note"\nanchors = { min_kappa = 0.4 }')
    r = proj.run("t1")
    assert r.code == 3, r.output
    lines = [ln.split("loosened: ")[1] for ln in r.out.splitlines() if ln.startswith("regression: a: the gate was loosened")]
    assert lines == ['too_little_data "fail" -> "note"', "anchors min_kappa 0.6 -> 0.4", "anchors min_ac1 0.5 -> unset"]
    _edit(proj, "anchors = { min_kappa = 0.4 }", "anchors = { min_kappa = 0.9, min_ac1 = 0.5 }")
    tighter = proj.run("t1")
    assert "regression: a: the gate was loosened: too_little_data" in tighter.out
    assert "anchors min_kappa 0.6 -> 0.9" in tighter.out and "the gate was tightened" in tighter.out


def test_gate_settings_name_every_cell_as_the_plan_does_without_resolving_eval_folders(tmp_path, monkeypatch) -> None:
    """One entry per cell of the tier (``eval[experiment]`` under experiments, the eval's name without), each
    with its column's requirements; read from the manifest alone: no eval folder is resolved on disk (a stat
    per part of the path, per eval, on every run)."""
    from evalrun.baseline.settings import gate_settings
    from evalrun.manifest import load_manifest
    from evalrun.manifest.schema import Manifest
    from evalrun.plan import cells

    for name in ("plain", "both"):
        (tmp_path / "evals" / name).mkdir(parents=True)
    (tmp_path / "evalrun.toml").write_text(
        eval_entry("plain", extra='experiments = []\n') + eval_entry("both", extra='requires = ["env:DB"]\n')
        + eval_entry("elsewhere", tier="t2").replace('dir = "evals/elsewhere"', 'dir = "evals/plain"')
        + '[experiments.m]\nrequires = ["env:GPU"]\n[experiments.n]\n',
        encoding="utf-8",
    )
    manifest = load_manifest(tmp_path / "evalrun.toml")
    expected = {planned.name: planned for spec in manifest.evals if spec.tier == "t1" for planned, _ in cells(manifest, spec)}

    def no_disk(self, spec):
        raise AssertionError(f"eval_dir({spec.name}) resolved on disk")

    monkeypatch.setattr(Manifest, "eval_dir", no_disk)
    got = gate_settings(manifest, "t1")
    assert list(got) == list(expected) == ["plain", "both[m]", "both[n]"]
    assert got["plain"].requires == ()
    assert got["both[m]"].requires == ("env:DB", "env:GPU")
    assert got["both[n]"].requires == ("env:DB",)


# --- the tier's isolation and the [models] guards -------------------------------------------

STRICT_GUARDS = dict(network="loopback", require_isolation=True, key_vars=("MY_KEY", "OTHER_KEY"),
                     replay_match="request", strict_replay=True)


def _diff(before: GateSettings, now: GateSettings) -> tuple[list[str], list[str]]:
    from evalrun.baseline.settings import diff_settings

    regressions: list = []
    stale: list = []
    diff_settings({"a": before}, {"a": now}, ["a"], regressions, stale)
    return [c.message for c in regressions], [c.message for c in stale]


def test_each_guard_loosened_alone_is_one_regression_line_and_tightened_alone_a_note() -> None:
    strict = GateSettings(tier="t1", **STRICT_GUARDS)
    loosened = {
        "network": ("host", 'a: the gate was loosened: network "loopback" -> "host" (scorers reach the network)'),
        "require_isolation": (False, "a: the gate was loosened: require_isolation true -> false "
                                     "(a run that cannot isolate only warns)"),
        "key_vars": (("OTHER_KEY",), 'a: the gate was loosened: [models] key_vars no longer holds "MY_KEY" '
                                     "(its key reaches t1/t2 scorers)"),
        "replay_match": ("index", 'a: the gate was loosened: [models] replay_match "request" -> "index" '
                                  "(a changed request no longer fails)"),
        "strict_replay": (False, "a: the gate was loosened: [models] strict_replay true -> false "
                                 "(a recorded call not requested no longer fails)"),
    }
    for key, (value, line) in loosened.items():
        looser = strict._replace(**{key: value})
        assert _diff(strict, looser) == ([line], []), key
        regressions, stale = _diff(looser, strict)  # the way back tightens: a note, no regression
        assert regressions == [] and len(stale) == 1 and stale[0].startswith("a: the gate was tightened: "), key
    regressions, stale = _diff(strict, strict._replace(key_vars=("MY_KEY", "NEW_KEY", "OTHER_KEY")))
    assert regressions == [] and stale == ['a: the gate was tightened: [models] key_vars holds "NEW_KEY" now']


@pytest.mark.parametrize(("before", "after", "words"), [
    ({"repeat": 3}, {"repeat": 2}, "repeat 3 -> 2"),
    ({"min_pass_rate": 0.9}, {"min_pass_rate": 0.8}, "min_pass_rate 0.9 -> 0.8"),
    ({"alpha": 0.05}, {"alpha": 0.01}, "alpha 0.05 -> 0.01"),
    ({"stop": "never"}, {"stop": "decided"}, 'stop "never" -> "decided"'),
    ({"skips": "fail"}, {"skips": "skip"}, 'skips "fail" -> "skip" (a skip no longer fails)'),
    ({"requires": ()}, {"requires": ("env:K",)}, 'requires "env:K" now (one more way to skip)'),
    ({"strict": True}, {"strict": False}, "[baseline] strict true -> false"),
    ({"too_little_data": "fail"}, {"too_little_data": "note"}, 'too_little_data "fail" -> "note"'),
    ({"min_kappa": 0.6}, {"min_kappa": 0.4}, "anchors min_kappa 0.6 -> 0.4"),
    ({"min_ac1": 0.6}, {"min_ac1": None}, "anchors min_ac1 0.6 -> unset"),
])
def test_each_setting_loosened_alone_is_its_line_and_the_way_back_a_note(before, after, words) -> None:
    strict, loose = GateSettings(tier="t1", **before), GateSettings(tier="t1", **after)
    assert _diff(strict, loose) == ([f"a: the gate was loosened: {words}"], [])
    regressions, stale = _diff(loose, strict)
    assert regressions == [] and len(stale) == 1 and stale[0].startswith("a: the gate was tightened: ")


def test_guards_an_older_baseline_did_not_record_are_not_compared(tmp_path: Path) -> None:
    path = tmp_path / "t1.toml"
    path.write_text('["/settings"]\na = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", '
                    'skips = "skip", requires = [], strict = false }\n\n[a]\nx = 1\n')
    recorded = load_baseline(path).settings["a"]
    assert (recorded.network, recorded.require_isolation, recorded.key_vars, recorded.replay_match,
            recorded.strict_replay) == (None, None, None, None, None)
    loosest = GateSettings(tier="t1", network="host", require_isolation=False, key_vars=(), replay_match="index",
                           strict_replay=False)
    assert _diff(recorded, loosest) == ([], [])  # the upgrade day: nothing to compare, no note
    # written again (a filtered update carries it over), it stays unrecorded rather than recorded as loose
    write_baseline(path, {"a": {"x": 1}}, "evalrun baseline --update t1", {"a": recorded})
    assert load_baseline(path).settings["a"] == recorded


@pytest.mark.parametrize(("key", "bad", "says"), [
    ("tier", '"t4"', "tier must be one of t1, t2, t3"), ("repeat", "true", "repeat must be an integer >= 1"),
    ("min_pass_rate", "1.5", "min_pass_rate must be a number from 0 to 1"), ("alpha", "nan", "alpha must be"),
    ("stop", '"early"', "stop must be"), ("skips", '"never"', "skips must be"),
    ("requires", "[1]", "requires must be an array of strings"), ("requires", '"env:K"', "requires must be an array"),
    ("strict", '"yes"', "strict must be true or false"),
])
def test_each_bad_recorded_setting_is_one_line_naming_it(tmp_path: Path, key: str, bad: str, says: str) -> None:
    from evalrun.errors import BaselineError

    entry = {"tier": '"t1"', "repeat": "1", "min_pass_rate": "1.0", "alpha": "0.05", "stop": '"never"',
             "skips": '"skip"', "requires": "[]", "strict": "false", key: bad}
    path = tmp_path / "t1.toml"
    path.write_text('["/settings"]\na = { ' + ", ".join(f"{k} = {v}" for k, v in entry.items()) + " }\n[a]\nx = 1\n")
    with pytest.raises(BaselineError, match=says) as caught:
        load_baseline(path)
    assert "t1.toml" in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_guard_is_one_line_naming_it(tmp_path: Path) -> None:
    import pytest

    from evalrun.errors import BaselineError

    path = tmp_path / "t1.toml"
    head = ('["/settings"]\na = { tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", '
            'skips = "skip", requires = [], strict = false, ')
    for bad, says in (('network = "wide"', "network must be"), ("require_isolation = 1", "require_isolation must be"),
                      ("key_vars = [1]", "key_vars must be"), ('replay_match = "digest"', "replay_match must be"),
                      ('strict_replay = "yes"', "strict_replay must be")):
        path.write_text(head + bad + " }\n[a]\nx = 1\n")
        with pytest.raises(BaselineError, match=says) as caught:
            load_baseline(path)
        assert "t1.toml" in str(caught.value) and "\n" not in str(caught.value)


def test_loosening_isolation_or_a_models_guard_exits_3_until_the_update_records_it(project) -> None:
    models = '[models]\nkey_vars = ["MY_KEY", "OTHER_KEY"]\nstrict_replay = true\n\n'
    proj = _project(project, tier_tables="[tiers.t1]\n\n" + models)
    path = proj.root / "baselines/t1.toml"
    text = path.read_text()
    recorded = ('network = "loopback", require_isolation = false, key_vars = ["MY_KEY", "OTHER_KEY"], '
                'replay_match = "request", strict_replay = true }')
    assert text.count(recorded) == 2, text  # a and b
    # As recorded on a machine that isolates (require_isolation = true cannot run where isolation is missing).
    path.write_text(text.replace("require_isolation = false", "require_isolation = true"))
    _edit(proj, "[tiers.t1]\n", '[tiers.t1]\nnetwork = "host"\n')
    _edit(proj, 'key_vars = ["MY_KEY", "OTHER_KEY"]\nstrict_replay = true',
          'key_vars = ["OTHER_KEY"]\nstrict_replay = false\nreplay_match = "index"')
    r = proj.run("t1")
    assert r.code == 3, r.output
    lines = [ln.split("loosened: ")[1] for ln in r.out.splitlines() if ln.startswith("regression: a: the gate was loosened")]
    assert lines == [
        'network "loopback" -> "host" (scorers reach the network)',
        "require_isolation true -> false (a run that cannot isolate only warns)",
        '[models] key_vars no longer holds "MY_KEY" (its key reaches t1/t2 scorers)',
        '[models] replay_match "request" -> "index" (a changed request no longer fails)',
        "[models] strict_replay true -> false (a recorded call not requested no longer fails)",
    ]
    assert "a looser gate must be committed in the baseline" in r.out
    assert proj.run("baseline", "--update", "t1").code == 0
    assert ('network = "host", require_isolation = false, key_vars = ["OTHER_KEY"], replay_match = "index", '
            'strict_replay = false }') in path.read_text()  # in the pull request's diff
    _edit(proj, "strict_replay = false", "strict_replay = true")  # tightening passes, with a note
    tighter = proj.run("t1")
    assert tighter.code == 0, tighter.output
    assert "a: the gate was tightened: [models] strict_replay false -> true" in tighter.out


# --- where a mutation sample found the settings unwatched ------------------------------------------------------------


def test_a_filtered_update_records_todays_settings_for_evals_an_older_baseline_had_none_for() -> None:
    from evalrun.baseline.settings import updated_settings

    old_a, now_a, now_b = GateSettings(tier="t1", repeat=5), GateSettings(tier="t1"), GateSettings(tier="t1", repeat=2)
    current = {"a": now_a, "b": now_b}
    # A baseline without settings: the evals this update did not run get today's, not nothing
    # (nothing would read "settings not recorded yet" on the next run, exit 3 under strict).
    assert updated_settings(None, current, ran=["a"], keep=["a", "b"]) == {"a": now_a, "b": now_b}
    # A settings table that lacks b (a hand edit) alike; a it did not run keeps what was recorded.
    assert updated_settings({"a": old_a}, current, ran=["b"], keep=["a", "b"]) == {"a": old_a, "b": now_b}
    assert updated_settings({"a": old_a}, current, ran=["a"], keep=["a"]) == {"a": now_a}


def test_the_lowest_judge_floors_read_back(tmp_path: Path) -> None:
    path = tmp_path / "t1.toml"
    floors = GateSettings(tier="t1", min_kappa=-1.0, min_ac1=-1.0)
    write_baseline(path, {"a": {"x": 1}}, "evalrun baseline --update t1", {"a": floors})
    assert "min_kappa = -1.0, min_ac1 = -1.0" in path.read_text()
    assert load_baseline(path).settings == {"a": floors}
    path.write_text(path.read_text().replace("-1.0", "-1"))  # a hand edit: tomllib reads it
    assert load_baseline(path).settings == {"a": floors}


def test_a_move_from_or_to_a_tier_evalrun_does_not_know_reads_as_looser() -> None:
    from evalrun.baseline.settings import tier_move

    assert tier_move("a", "t1", "t2") == (True, "a: moved from t1 to t2, a looser tier")
    assert tier_move("a", "t3", "t2") == (False, "a: moved from t3 to t2, a stricter tier")
    assert tier_move("a", "t1", "t9")[0] is True and tier_move("a", "t0", "t1")[0] is True  # never read as stricter
