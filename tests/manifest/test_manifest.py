"""The manifest loader: one asset per mistake, each a one-line message with file and place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalrun.errors import ExitCode, ManifestError, file_label
from evalrun.manifest import load_manifest

from harness import TESTS, an_eval, manifest

ASSETS = TESTS / "assets" / "manifest"


@pytest.mark.parametrize(
    ("asset", "expected"),
    [
        ("unknown_key.toml", 'evals[0] ("a").retries: unknown key'),
        ("duplicate_name.toml", 'evals[1] ("a").name: duplicate eval name, also evals[0]'),
        ("unknown_tier.toml", "evals[0] (\"a\").tier: unknown tier 't9'; use one of t1, t2, t3"),
        ("missing_run.toml", 'evals[0] ("a").run: required key is missing'),
        ("empty_run.toml", 'evals[0] ("a").run: must not be empty'),
        ("run_not_array.toml", 'evals[0] ("a").run: must be an array'),
        ("dir_missing.toml", "evals[0] (\"a\").dir: 'evals/nope' does not exist"),
        ("dir_outside.toml", "evals[0] (\"a\").dir: '../..' lies outside the manifest's folder"),
        ("timeout_zero.toml", 'evals[1] ("rls-isolation").timeout: must be > 0'),
        ("invalid_toml.toml", "invalid TOML: "),
        ("t1_service_probe.toml", "t1 is static by promise"),
        ("unknown_probe.toml", "unknown probe 'db'; define [probes.db]"),
        ("unknown_tier_table.toml", "tiers.t4: unknown tier"),
        ("junit_without_path.toml", 'format = "junit" needs junit ='),
        ("reportlog_without_path.toml", 'evals[0] ("a").reportlog: format = "pytest-reportlog" needs reportlog ='),
        ("reportlog_wrong_format.toml", 'evals[0] ("a").reportlog: only read with format = "pytest-reportlog"'),
        ("unknown_service.toml", "unknown service 'db'; define [services.db]"),
    ],
)
def test_bad_manifest_is_one_line_naming_file_and_place(asset: str, expected: str) -> None:
    with pytest.raises(ManifestError) as info:
        load_manifest(ASSETS / asset)
    message = str(info.value)
    assert asset in message
    assert expected in message
    assert "\n" not in message
    assert info.value.exit_code == ExitCode.USAGE


def test_invalid_toml_names_the_line() -> None:
    with pytest.raises(ManifestError, match=r"invalid_toml.toml: invalid TOML: .*line 3"):
        load_manifest(ASSETS / "invalid_toml.toml")


def test_missing_manifest_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no such file; create it or pass --manifest PATH"):
        load_manifest(tmp_path / "manifest.toml")


def test_valid_manifest_loads_with_defaults(tmp_path: Path) -> None:
    (tmp_path / "evals" / "x").mkdir(parents=True)
    (tmp_path / "manifest.toml").write_text(manifest(an_eval("x", tags=["a"]), tiers={"t1": {"description": "static"}}).text)
    m = load_manifest(tmp_path / "manifest.toml")
    spec = m.evals[0]
    assert (spec.name, spec.tier, spec.run, spec.timeout, spec.tags, spec.shell) == (
        "x", "t1", ["python", "score.py"], 300.0, ["a"], False
    )
    assert m.eval_dir(spec) == (tmp_path / "evals" / "x").resolve()
    assert set(m.tiers) == {"t1"}


def test_no_tiers_table_means_the_three_tiers(tmp_path: Path) -> None:
    (tmp_path / "manifest.toml").write_text("")
    assert list(load_manifest(tmp_path / "manifest.toml").tiers) == ["t1", "t2", "t3"]


def test_symlinked_dir_escaping_the_manifest_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    (root / "evals").mkdir(parents=True)
    os.symlink(outside, root / "evals" / "link")
    (root / "manifest.toml").write_text(manifest(an_eval("x", ["true"], dir="evals/link")).text)
    with pytest.raises(ManifestError, match="lies outside the manifest's folder"):
        load_manifest(root / "manifest.toml")


_EVAL = manifest(an_eval("a", ["x"], dir=".")).text  # a misspelt key is appended to it as text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_EVAL + "timout = 3\n", 'evals[0] ("a").timout: unknown key; did you mean "timeout"?'),
        (_EVAL + "budget = { cals = 1 }\n", 'evals[0] ("a").budget.cals: unknown key; did you mean "calls"?'),
        ('[[eval]]\nname = "a"\n', 'eval: unknown key; did you mean "evals"?'),
        ('[tiers.t1]\nskip = "fail"\n', 'tiers.t1.skip: unknown key; did you mean "skips"?'),
        ("[experiments.m]\nenvv = {}\n", 'experiments.m.envv: unknown key; did you mean "env"?'),
        ('[models]\njudges = "x"\n', 'models.judges: unknown key; did you mean "judge"?'),
        (_EVAL + "zzzz = 1\n", 'evals[0] ("a").zzzz: unknown key; check its spelling against the manifest reference'),
    ],
)
def test_an_unknown_key_names_the_known_key_it_is_closest_to(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "manifest.toml"
    path.write_text(text)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    assert str(caught.value).startswith(f"{file_label(path)}: {says}")


# ---------------------------------------------------------------- replay sessions: one eval's recordings, never two


@pytest.mark.parametrize("first, second", [("chat v1", "chat-v1"), ("café", "caf-"), ("a.b!", "a.b?")])
def test_two_evals_whose_default_sessions_fold_together_are_refused_naming_both(tmp_path: Path, first: str,
                                                                                 second: str) -> None:
    (tmp_path / "evals" / "chat").mkdir(parents=True)
    evals = (an_eval(n, ["python", "s.py"], tier="t3", dir="evals/chat", model=True) for n in (first, second))
    (tmp_path / "manifest.toml").write_text(manifest(*evals, tiers={"t3": {}}).text, encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path / "manifest.toml")
    text = str(caught.value)
    assert "\n" not in text
    assert f'evals[1] ("{second}")' in text and f'evals[0] ("{first}")' in text, text
    assert "fixtures_for" in text and "rename" in text, text


def test_sessions_that_fold_together_in_different_folders_or_on_purpose_are_fine(tmp_path: Path) -> None:
    for d in ("a", "b", "c"):
        (tmp_path / "evals" / d).mkdir(parents=True)
    (tmp_path / "manifest.toml").write_text(manifest(
        an_eval("chat v1", ["x"], tier="t3", dir="evals/a", model=True),
        an_eval("chat-v1", ["x"], tier="t3", dir="evals/b", model=True),  # own folder
        an_eval("chat_v1 live", ["x"], tier="t3", dir="evals/c", model=True, fixtures_for="chat v1"),  # on purpose
        an_eval("chat.v1", ["x"], tier="t3", dir="evals/a", model=True, fixtures_for="chat v1"),
        tiers={"t3": {}},
    ).text, encoding="utf-8")
    assert len(load_manifest(tmp_path / "manifest.toml").evals) == 4


@pytest.mark.parametrize(
    ("tier", "fix"),
    [
        ("t2", "add model = true (or [tiers.t2] model = true), or remove fixtures_for"),
        ("t1", "remove fixtures_for"),
    ],
)
def test_fixtures_for_without_model_calls_through_evalrun_is_refused(tmp_path: Path, tier: str, fix: str) -> None:
    def recorded_and_replayed(tier_b: str, **tables) -> str:
        return manifest(an_eval("a", ["x"], tier="t2", dir="e", model=True),
                        an_eval("b", ["x"], tier=tier_b, dir="e", fixtures_for="a"), **tables).text

    (tmp_path / "e").mkdir()
    (tmp_path / "manifest.toml").write_text(recorded_and_replayed(tier), encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path / "manifest.toml")
    message = str(caught.value)
    assert 'manifest.toml: evals[1] ("b").fixtures_for: ' in message and message.endswith(fix), message
    assert "\n" not in message
    # the tier's own model = true is enough
    (tmp_path / "manifest.toml").write_text(recorded_and_replayed("t2", tiers={"t2": {"model": True}}), encoding="utf-8")
    assert len(load_manifest(tmp_path / "manifest.toml").evals) == 2
