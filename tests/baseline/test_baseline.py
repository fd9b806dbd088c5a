"""Tests of the baseline gate's core: reading, comparing, updating, writing, formatting."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalrun.baseline import (
    baseline_path,
    compare_to_baseline,
    load_baseline,
    update_baseline,
    write_baseline,
)
from evalrun.errors import BaselineError, BaselineRefused, ExitCode
from evalrun.manifest import load_manifest
from evalrun.reports_out.baseline_text import format_comparison
from evalrun.results import CheckResult, EvalResult, RunResults, Status

from harness import TESTS, an_eval, manifest

ASSETS = TESTS / "assets" / "baseline"
UPDATE = "evalrun baseline --update t1"


# --- helpers -----------------------------------------------------------------


def _eval(name: str, status: Status = Status.PASSED, **checks: int) -> EvalResult:
    return EvalResult(
        name=name,
        tier="t1",
        dir=f"evals/{name}",
        status=status,
        checks=[CheckResult(name=c, assertions=n, passed=True) for c, n in checks.items()],
    )


def _run(*evals: EvalResult, interrupted: bool = False) -> RunResults:
    return RunResults(
        evalrun_version="0.1.0",
        tier="t1",
        manifest="manifest.toml",
        started_at="2024-01-01T00:00:00Z",
        interrupted=interrupted,
        evals=list(evals),
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder to work in, as the cwd, so messages name ``baselines/t1.toml``."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _compare(baseline, results, names, strict=False):
    return compare_to_baseline(baseline, results, set(names), Path("baselines/t1.toml"), strict, UPDATE)


def _kinds(changes) -> list[tuple[str, str | None, str]]:
    return [(c.eval, c.check, c.kind) for c in changes]


# --- the path ----------------------------------------------------------------


def test_baseline_path_is_under_the_manifests_baseline_dir(tmp_path: Path) -> None:
    (tmp_path / "evals" / "a").mkdir(parents=True)
    manifest_file = tmp_path / "manifest.toml"
    manifest_file.write_text(manifest(an_eval("a", ["true"]), baseline={"dir": "gates/base"}, tiers={"t1": {}}).text)
    assert baseline_path(load_manifest(manifest_file), "t1") == tmp_path.resolve() / "gates" / "base" / "t1.toml"


def test_baseline_path_defaults_to_baselines_folder(tmp_path: Path) -> None:
    manifest_file = tmp_path / "manifest.toml"
    manifest_file.write_text("[tiers.t2]\n")
    assert baseline_path(load_manifest(manifest_file), "t2") == tmp_path.resolve() / "baselines" / "t2.toml"


# --- loading -----------------------------------------------------------------


def test_load_missing_file_is_none(project: Path) -> None:
    assert load_baseline(project / "baselines" / "t1.toml") is None


def test_load_reads_counts(project: Path) -> None:
    path = project / "baselines" / "t1.toml"
    path.parent.mkdir()
    path.write_text('# generated\n[rls-isolation]\n"rows are isolated per tenant" = 4\n"b" = 0\n[empty]\n')
    assert load_baseline(path) == {"rls-isolation": {"rows are isolated per tenant": 4, "b": 0}, "empty": {}}


_COUNT = 'assertion count must be an integer >= 0, got'
_FIX = "rerun evalrun baseline --update t1"
# One asset per case under tests/assets/baseline/, named for the case.
SHAPE_CASES = {
    "count_is_string": f'baselines/t1.toml: [gate-bites] "x": {_COUNT} "3"; {_FIX}',
    "count_is_negative": f'baselines/t1.toml: [gate-bites] "x": {_COUNT} -1; {_FIX}',
    "count_is_float": f'baselines/t1.toml: [gate-bites] "x": {_COUNT} 2.5; {_FIX}',
    "count_is_bool": f'baselines/t1.toml: [gate-bites] "x": {_COUNT} true; {_FIX}',
    "count_is_array": f'baselines/t1.toml: [gate-bites] "x": {_COUNT} an array; {_FIX}',
    "count_is_date": f'baselines/t1.toml: [gate-bites] "x": {_COUNT} a date; {_FIX}',
    "count_is_table": f'baselines/t1.toml: [gate] "bites": {_COUNT} a table; {_FIX}',
    "eval_is_not_table": (
        f'baselines/t1.toml: "gate-bites": must be a table [gate-bites] of "check" = assertion count, got 3; {_FIX}'
    ),
    "eval_is_array_of_tables": (
        'baselines/t1.toml: "gate-bites": must be a table [gate-bites] of "check" = assertion count, '
        f"got an array; {_FIX}"
    ),
    "not_utf8": f"baselines/t1.toml: line 3: not UTF-8 text (byte 25); {_FIX}",
}


def test_every_shape_asset_has_a_case() -> None:
    assets = {p.stem for p in ASSETS.glob("*.toml")} - {"invalid_toml"}
    assert assets == set(SHAPE_CASES)


@pytest.mark.parametrize("asset", sorted(SHAPE_CASES))
def test_load_rejects_wrong_shapes(project: Path, asset: str) -> None:
    path = project / "baselines" / "t1.toml"
    path.parent.mkdir()
    shutil.copyfile(ASSETS / f"{asset}.toml", path)
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    assert str(info.value) == SHAPE_CASES[asset]
    assert info.value.exit_code == ExitCode.USAGE


def test_load_invalid_toml_names_file_and_line(project: Path) -> None:
    path = project / "baselines" / "t1.toml"
    path.parent.mkdir()
    shutil.copyfile(ASSETS / "invalid_toml.toml", path)
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    assert str(info.value) == (
        "baselines/t1.toml: line 3, column 7: invalid TOML (Invalid value); "
        "fix that line or rerun evalrun baseline --update t1"
    )


def test_load_invalid_toml_at_end_of_file(project: Path) -> None:
    path = project / "t1.toml"
    path.write_text('[a]\n"x" = "unterminated')
    with pytest.raises(BaselineError, match=r"^t1\.toml: .*invalid TOML \(.+\); fix that line or rerun") as info:
        load_baseline(path)
    assert "\n" not in str(info.value)


def test_load_a_directory_is_an_error(project: Path) -> None:
    (project / "baselines" / "t1.toml").mkdir(parents=True)
    with pytest.raises(BaselineError, match=r"^baselines/t1\.toml: is a directory"):
        load_baseline(project / "baselines" / "t1.toml")


def test_error_names_file_relative_to_cwd_only_when_under_it(tmp_path: Path, monkeypatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = tmp_path / "t3.toml"
    shutil.copyfile(ASSETS / "count_is_string.toml", path)
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    assert str(info.value).startswith(f"{path}: [gate-bites]")
    assert str(info.value).endswith("rerun evalrun baseline --update t3")


# --- comparing ---------------------------------------------------------------


def test_compare_identical_finds_nothing() -> None:
    cmp = _compare({"a": {"x": 2, "y": 1}}, _run(_eval("a", x=2, y=1)), ["a"])
    assert cmp.exists and cmp.regressions == [] and cmp.stale == [] and cmp.not_compared == []
    assert cmp.path == "baselines/t1.toml" and cmp.update_command == UPDATE
    assert format_comparison(cmp) == []


def test_vanished_check_is_a_regression() -> None:
    cmp = _compare({"a": {"x": 2, "y": 1}}, _run(_eval("a", y=1)), ["a"])
    [change] = cmp.regressions
    fields = (change.eval, change.check, change.kind, change.baseline, change.current)
    assert fields == ("a", "x", "vanished-check", 2, None)
    assert change.message == 'a: check "x" vanished (baseline: 2 assertions)'
    assert cmp.stale == []


def test_vanished_check_singular() -> None:
    cmp = _compare({"a": {"x": 1, "y": 1}}, _run(_eval("a", y=1)), ["a"])
    assert cmp.regressions[0].message == 'a: check "x" vanished (baseline: 1 assertion)'


def test_weakened_check_is_a_regression() -> None:
    cmp = _compare({"a": {"x": 4}}, _run(_eval("a", x=1)), ["a"])
    [change] = cmp.regressions
    assert (change.kind, change.baseline, change.current) == ("weakened", 4, 1)
    assert change.message == 'a: check "x" asserts 1 (baseline: 4)'


def test_vanished_eval_is_a_regression_whatever_the_filters() -> None:
    # "old" is baselined, not in the manifest, and this run was filtered to "a".
    cmp = _compare({"a": {"x": 1}, "old": {"p": 4, "q": 5}}, _run(_eval("a", x=1)), ["a", "b"])
    [change] = cmp.regressions
    assert (change.eval, change.check, change.kind, change.baseline) == ("old", None, "vanished-eval", 9)
    assert change.message == "old: eval vanished from the manifest (baseline: 2 checks, 9 assertions)"
    assert cmp.not_compared == ["b"]


def test_vanished_eval_singular() -> None:
    cmp = _compare({"old": {"p": 1}}, _run(), [])
    assert cmp.regressions[0].message == "old: eval vanished from the manifest (baseline: 1 check, 1 assertion)"


def test_new_check_stronger_and_new_eval_are_stale() -> None:
    cmp = _compare({"a": {"x": 2}}, _run(_eval("a", x=3, y=1), _eval("b", z=2, w=5)), ["a", "b"])
    assert cmp.regressions == []
    assert [(c.eval, c.check, c.kind, c.baseline, c.current, c.message) for c in cmp.stale] == [
        ("a", "x", "stronger", 2, 3, 'a: check "x" asserts 3 (baseline: 2)'),
        ("a", "y", "new-check", None, 1, 'a: new check "y" (1 assertion)'),
        ("b", None, "new-eval", None, 7, "b: new eval, not in the baseline (2 checks, 7 assertions)"),
    ]


def test_failed_eval_is_compared() -> None:
    cmp = _compare({"a": {"x": 2}}, _run(_eval("a", Status.FAILED, x=1)), ["a"])
    assert _kinds(cmp.regressions) == [("a", "x", "weakened")]


@pytest.mark.parametrize(
    "status", [Status.SKIPPED, Status.ERROR, Status.TIMEOUT, Status.INTERRUPTED, Status.BUDGET]
)
def test_evals_without_a_report_are_not_compared(status: Status) -> None:
    # Its checks are gone from the results, but that is not a vanished check.
    cmp = _compare({"a": {"x": 2}, "b": {"y": 1}}, _run(_eval("a", status), _eval("b", y=1)), ["a", "b"])
    assert cmp.regressions == [] and cmp.stale == []
    assert cmp.not_compared == ["a"]


def test_filtered_out_evals_are_not_compared_and_listed_sorted() -> None:
    cmp = _compare(
        {"a": {"x": 2}, "c": {"y": 1}, "z": {"q": 1}},
        _run(_eval("a", x=2), _eval("m", Status.SKIPPED)),
        ["z", "a", "c", "m", "b"],
    )
    assert cmp.regressions == [] and cmp.stale == []
    assert cmp.not_compared == ["b", "c", "m", "z"]


def test_strict_moves_stale_into_regressions() -> None:
    cmp = _compare({"a": {"x": 2, "v": 3}}, _run(_eval("a", x=3, y=1, v=1), _eval("b", z=1)), ["a", "b"], strict=True)
    assert cmp.stale == [] and cmp.strict
    assert _kinds(cmp.regressions) == [
        ("a", "v", "weakened"),
        ("a", "x", "stronger"),
        ("a", "y", "new-check"),
        ("b", None, "new-eval"),
    ]


def test_no_baseline_file_makes_everything_stale_new_eval() -> None:
    cmp = _compare(None, _run(_eval("b", y=1), _eval("a", x=2), _eval("s", Status.SKIPPED)), ["a", "b", "s", "f"])
    assert not cmp.exists
    assert cmp.regressions == []
    assert _kinds(cmp.stale) == [("a", None, "new-eval"), ("b", None, "new-eval")]
    assert cmp.not_compared == ["f", "s"]


def test_no_baseline_file_in_strict_mode_regresses() -> None:
    # Deleting the baseline file must not silently open a strict gate.
    cmp = _compare(None, _run(_eval("a", x=2)), ["a"], strict=True)
    assert _kinds(cmp.regressions) == [("a", None, "new-eval")]


def test_order_is_by_eval_then_check_whatever_the_input_order() -> None:
    baseline = {"zeta": {"b": 1, "a": 1}, "gone": {"k": 1}, "alpha": {"z": 5, "m": 5}}
    results = _run(_eval("zeta"), _eval("alpha", z=1, m=1, n=1))
    cmp = _compare(baseline, results, ["zeta", "alpha"])
    assert _kinds(cmp.regressions) == [
        ("alpha", "m", "weakened"),
        ("alpha", "z", "weakened"),
        ("gone", None, "vanished-eval"),
        ("zeta", "a", "vanished-check"),
        ("zeta", "b", "vanished-check"),
    ]
    assert _kinds(cmp.stale) == [("alpha", "n", "new-check")]


def test_odd_names_stay_on_one_line_in_messages() -> None:
    cmp = _compare({"a": {'say "hi"\nthen': 2}}, _run(_eval("a")), ["a"])
    assert cmp.regressions[0].message == 'a: check "say \\"hi\\"\\nthen" vanished (baseline: 2 assertions)'


# --- formatting --------------------------------------------------------------


def test_format_lists_regressions_then_stale_then_not_compared() -> None:
    cmp = _compare(
        {"a": {"x": 4, "gone": 1}, "b": {"p": 1}},
        _run(_eval("a", x=1, new=2), _eval("b", p=3), _eval("c", q=1), _eval("s", Status.SKIPPED)),
        ["a", "b", "c", "s", "f"],
    )
    assert format_comparison(cmp) == [
        'regression: a: check "gone" vanished (baseline: 1 assertion)',
        'regression: a: check "x" asserts 1 (baseline: 4)',
        f"if that was meant (checks removed or made to assert less on purpose), accept it with: {UPDATE} -e a",
        f"baseline is stale: 1 new check, 1 stronger check, 1 new eval; run: {UPDATE}",
        '  a: new check "new" (2 assertions)',
        '  b: check "p" asserts 3 (baseline: 1)',
        "  c: new eval, not in the baseline (1 check, 1 assertion)",
        "not compared: f, s",
    ]


def test_format_stale_plurals() -> None:
    cmp = _compare({"a": {}}, _run(_eval("a", x=1, y=2)), ["a"])
    assert format_comparison(cmp)[0] == f"baseline is stale: 2 new checks; run: {UPDATE}"


def test_format_without_a_baseline_file() -> None:
    cmp = _compare(None, _run(_eval("a", x=1)), ["a", "b"])
    assert format_comparison(cmp) == [
        f"no baseline at baselines/t1.toml; create it with: {UPDATE}",
        "not compared: b",
    ]


def test_format_strict_says_why_stale_items_regress() -> None:
    cmp = _compare({"a": {"x": 1}}, _run(_eval("a", x=2)), ["a"], strict=True)
    assert format_comparison(cmp) == [
        'regression: a: check "x" asserts 2 (baseline: 1)',
        f"baseline is strict: new checks and higher counts must be committed; run: {UPDATE}",
    ]


# --- updating ----------------------------------------------------------------


def test_update_rewrites_passed_evals_to_exactly_their_checks() -> None:
    old = {"a": {"x": 4, "gone": 1}}
    new, notes = update_baseline(old, _run(_eval("a", x=1, y=2), _eval("b", z=3)), {"a", "b"}, filtered=False)
    assert new == {"a": {"x": 1, "y": 2}, "b": {"z": 3}}
    assert list(new) == ["a", "b"] and list(new["a"]) == ["x", "y"]
    assert notes == []
    assert old == {"a": {"x": 4, "gone": 1}}  # the input is not modified


def test_update_from_no_baseline() -> None:
    new, notes = update_baseline(None, _run(_eval("b", z=3), _eval("a", x=1)), {"a", "b"}, filtered=False)
    assert new == {"a": {"x": 1}, "b": {"z": 3}}
    assert notes == []


@pytest.mark.parametrize("status", [Status.SKIPPED, Status.BUDGET])
def test_update_keeps_entries_of_evals_not_checked(status: Status) -> None:
    old = {"a": {"x": 4}, "s": {"p": 7, "q": 1}}
    new, notes = update_baseline(old, _run(_eval("a", x=5), _eval("s", status), _eval("n", status)),
                                 {"a", "s", "n"}, filtered=False)
    assert new == {"a": {"x": 5}, "s": {"p": 7, "q": 1}}
    reason = "skipped" if status is Status.SKIPPED else "stopped by the model budget"
    assert notes == [
        f'not added "n": {reason}, not checked this run',
        f'kept "s": {reason}, not checked this run; previous entry unchanged',
    ]


def test_update_unfiltered_drops_evals_gone_from_the_manifest() -> None:
    new, notes = update_baseline({"a": {"x": 1}, "old-eval": {"y": 1}}, _run(_eval("a", x=1)), {"a"}, filtered=False)
    assert new == {"a": {"x": 1}}
    assert notes == ['dropped "old-eval": no longer in the manifest']


def test_update_filtered_keeps_evals_gone_from_the_manifest_and_unrun_evals() -> None:
    old = {"a": {"x": 1}, "old-eval": {"y": 1}, "other": {"z": 2}}
    new, notes = update_baseline(old, _run(_eval("a", x=2)), {"a", "other"}, filtered=True)
    assert new == {"a": {"x": 2}, "old-eval": {"y": 1}, "other": {"z": 2}}
    assert notes == [
        'kept "old-eval": no longer in the manifest, but this run was filtered; update without filters to drop it'
    ]


@pytest.mark.parametrize(
    ("status", "shown"),
    [(Status.FAILED, "failed"), (Status.ERROR, "error"), (Status.TIMEOUT, "timeout"),
     (Status.INTERRUPTED, "interrupted")],
)
def test_update_refuses_a_failing_state(status: Status, shown: str) -> None:
    with pytest.raises(BaselineRefused) as info:
        update_baseline({"a": {"x": 1}}, _run(_eval("a", x=1), _eval("b", status, x=1)), {"a", "b"}, False)
    assert str(info.value) == (
        f"baseline not updated: 1 eval did not pass: b ({shown}); "
        "a failing state is never a baseline, fix them and rerun the tier"
    )
    assert info.value.exit_code == ExitCode.FAILED == 1


def test_update_refusal_lists_every_offender_sorted() -> None:
    results = _run(_eval("z", Status.TIMEOUT), _eval("a", x=1), _eval("m", Status.FAILED, x=1))
    with pytest.raises(BaselineRefused, match=r"2 evals did not pass: m \(failed\), z \(timeout\);"):
        update_baseline(None, results, {"a", "m", "z"}, False)


def test_update_refuses_an_interrupted_run() -> None:
    with pytest.raises(BaselineRefused, match=r"^baseline not updated: the run was interrupted; rerun the tier"):
        update_baseline(None, _run(_eval("a", x=1), interrupted=True), {"a"}, False)


def test_refused_update_leaves_the_old_file_byte_for_byte(project: Path) -> None:
    path = project / "baselines" / "t1.toml"
    path.parent.mkdir()
    original = b'# hand-touched\n[a]\n"x" = 1\n'
    path.write_bytes(original)
    before = path.stat().st_mtime_ns
    with pytest.raises(BaselineRefused):
        new, _ = update_baseline(load_baseline(path), _run(_eval("a", Status.FAILED, x=9)), {"a"}, False)
        write_baseline(path, new, UPDATE)
    assert path.read_bytes() == original
    assert path.stat().st_mtime_ns == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["t1.toml"]


# --- writing -----------------------------------------------------------------


def test_write_is_sorted_with_header_exact_text(project: Path) -> None:
    path = project / "baselines" / "t1.toml"
    data = {
        "rls-isolation": {"rows are isolated per tenant": 4, "forged owner insert is refused": 2},
        "gate-bites": {"b_check": 1, "a_check": 10},
    }
    write_baseline(path, data, UPDATE)
    assert path.read_text(encoding="utf-8") == textwrap.dedent(
        """\
        # generated by evalrun; update with: evalrun baseline --update t1
        [gate-bites]
        a_check = 10
        b_check = 1

        [rls-isolation]
        "forged owner insert is refused" = 2
        "rows are isolated per tenant" = 4
        """
    )
    assert load_baseline(path) == data


def test_write_is_deterministic_whatever_the_input_order(project: Path) -> None:
    one, two = project / "one.toml", project / "two.toml"
    write_baseline(one, {"b": {"y": 1, "x": 2}, "a": {"q": 3}}, UPDATE)
    write_baseline(two, {"a": {"q": 3}, "b": {"x": 2, "y": 1}}, UPDATE)
    assert one.read_bytes() == two.read_bytes()


def test_write_keeps_the_header_on_one_line(project: Path) -> None:
    path = project / "t1.toml"
    write_baseline(path, {"a": {"x": 1}}, "evalrun baseline\n--update t1")
    assert path.read_text().splitlines()[0] == "# generated by evalrun; update with: evalrun baseline --update t1"


ODD_NAMES = [
    'say "hi"',
    "dotted.check.name",
    "back\\slash",
    "ünïcödé ✓ 検査",
    "line\nbreak",
    "tab\there",
    "control \x00 \x1b \x7f",
    "",
    "  padded  ",
    "[not a table]",
    "= 3",
    "# not a comment",
    "'single'",
    '"""triple"""',
]


def test_odd_check_and_eval_names_round_trip(project: Path) -> None:
    data = {
        "plain": {name: index for index, name in enumerate(ODD_NAMES)},
        "dotted.eval": {"x": 1},
        'quoted "eval"': {"y": 2},
        "ünï": {"z": 3},
    }
    path = project / "baselines" / "t1.toml"
    write_baseline(path, data, UPDATE)
    assert load_baseline(path) == data


def test_write_rejects_names_toml_cannot_hold(project: Path) -> None:
    path = project / "t1.toml"
    with pytest.raises(BaselineError, match=r"^t1\.toml: a check or eval name is not valid Unicode"):
        write_baseline(path, {"a": {"lone \ud800 surrogate": 1}}, UPDATE)
    assert list(project.iterdir()) == []


def test_write_replaces_and_leaves_no_temp_files(project: Path) -> None:
    path = project / "baselines" / "t1.toml"
    write_baseline(path, {"a": {"x": 1}}, UPDATE)
    write_baseline(path, {"a": {"x": 2}}, UPDATE)
    assert load_baseline(path) == {"a": {"x": 2}}
    assert sorted(p.name for p in path.parent.iterdir()) == ["t1.toml"]


_WRITER = textwrap.dedent(
    """\
    import sys
    from pathlib import Path
    from evalrun.baseline import write_baseline
    path = Path(sys.argv[1])
    big = [{f"eval-{e:03d}": {f"check {c} of {flavour}": c for c in range(50)} for e in range(100)}
           for flavour in ("one", "two")]
    print("ready", flush=True)
    n = 0
    while True:
        write_baseline(path, big[n % 2], "evalrun baseline --update t1")
        n += 1
    """
)


def test_a_writer_killed_mid_write_never_leaves_a_torn_file(project: Path) -> None:
    """SIGKILL a process rewriting a 5,000-check baseline while this one reads it: every read parses."""
    path = project / "baselines" / "t1.toml"
    write_baseline(path, {"eval-000": {"seed": 1}}, UPDATE)
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        reads, seen = 0, set()
        deadline = time.monotonic() + 120  # only a writer that never writes gets here
        killed_at = None
        # Read until the writer's files have been seen for 20 reads, kill it
        # mid-write, then read 20 more times what it left.
        while killed_at is None or reads < killed_at + 20:
            assert time.monotonic() < deadline, f"the writer's files never showed: {reads} reads, sizes {seen}"
            data = load_baseline(path)  # raises BaselineError on a torn file
            assert data is not None
            reads += 1
            seen.add(sum(len(v) for v in data.values()))
            if killed_at is None and 5000 in seen and reads >= 20:
                os.kill(writer.pid, signal.SIGKILL)  # at an arbitrary point of a write
                killed_at = reads
        writer.wait(timeout=60)
        assert writer.returncode == -signal.SIGKILL
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    assert reads > 10
    assert 5000 in seen  # the reader really did see the writer's files
    final = load_baseline(path)
    assert final is not None and sum(len(v) for v in final.values()) == 5000
