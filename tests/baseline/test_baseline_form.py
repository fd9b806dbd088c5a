"""The baseline's written form: evalrun's own fast writer and reader agree with TOML, for any names."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.baseline import load_baseline, write_baseline
from evalrun.baseline.format import read_written_form
from evalrun.errors import BaselineError

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
# An eval's name never holds "/" (the manifest refuses it), which keeps "/settings" and "/judges" for the
# baseline's own tables; a check's name may hold anything.
eval_names = names.filter(lambda n: "/" not in n)
baselines = st.dictionaries(eval_names, st.dictionaries(names, st.integers(0, 10**12), max_size=5), max_size=5)


@settings(max_examples=300, deadline=None)
@given(baselines)
def test_what_evalrun_writes_is_toml_and_reads_back_the_same_fast(tmp_path_factory, data) -> None:
    path = Path(tmp_path_factory.mktemp("b")) / "t1.toml"
    write_baseline(path, data, "evalrun baseline --update t1")
    text = path.read_text(encoding="utf-8")
    assert tomllib.loads(text) == data  # valid TOML, the same data
    assert read_written_form(text) == data  # and the fast path takes it (no fallback)
    assert load_baseline(path) == data


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_the_fast_reader_never_accepts_what_toml_reads_differently(text) -> None:
    fast = read_written_form(text)
    if fast is None:
        return  # falls back to tomllib, which decides
    assert tomllib.loads(text) == fast


def test_hand_edits_and_duplicates_fall_back_to_toml(tmp_path: Path) -> None:
    assert read_written_form('[a]\n"x" = 1\n"x" = 2\n') is None  # tomllib will name the duplicate
    assert read_written_form("[a]\nx = 1 # a note\n") is None
    assert read_written_form("x = 1\n") is None  # a count outside any table: the shape error names it
    assert read_written_form("[a]\nx = 1\n[b]\ny = 0\n") == {"a": {"x": 1}, "b": {"y": 0}}


# ---------------------------------------------------------------- the whole-table reader (a million checks in ~1 s)

from evalrun.baseline.format import read_whole_written_form  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(baselines)
def test_the_whole_table_reader_takes_what_evalrun_writes(tmp_path_factory, data) -> None:
    path = Path(tmp_path_factory.mktemp("b")) / "t1.toml"
    write_baseline(path, data, "evalrun baseline --update t1")
    assert read_whole_written_form(path.read_text(encoding="utf-8")) == data


lines = st.sampled_from(
    ["", "# note", "[a]", '["b c"]', "[a b]", "x = 1", '"x y" = 2', '"x\\ty" = 0', "x = 01", '"x" = 3',
     '"a\\"b" = 4', "x = 1 # c", "[[a]]", 'x = "1"', "x = 1\r", '""" = 1']
)


@settings(max_examples=500, deadline=None)
@given(st.lists(lines | st.text(max_size=12), max_size=12), st.booleans())
def test_the_whole_table_reader_reads_no_more_and_no_differently_than_the_line_reader(parts, final) -> None:
    text = "\n".join(parts) + ("\n" if final else "")
    whole = read_whole_written_form(text)
    if whole is None:
        return  # the line reader, then tomllib, decide
    assert whole == read_written_form(text)
    assert tomllib.loads(text) == whole


def test_what_the_whole_table_reader_leaves_to_the_others() -> None:
    assert read_whole_written_form('[a]\n"x" = 1\n"x" = 2\n') is None  # a duplicate check
    assert read_whole_written_form("[a]\nx = 1\n[a]\ny = 1\n") is None  # a duplicate table
    assert read_whole_written_form("[a]\nx = 1\n# a hand-written note\ny = 2\n") is None
    assert read_written_form("[a]\nx = 1\n# a hand-written note\ny = 2\n") == {"a": {"x": 1, "y": 2}}
    assert read_whole_written_form("x = 1\n[a]\n") is None  # a count outside any table
    assert read_whole_written_form("[a]\nx = 1\n\n\n\n[b]\n\"y\\u00e9\" = 0") == {"a": {"x": 1}, "b": {"yé": 0}}
    assert read_whole_written_form("# generated\n\n") == {}


def test_a_hand_edited_baseline_still_loads_through_the_slower_readers(tmp_path: Path) -> None:
    path = tmp_path / "t1.toml"
    path.write_text("[a]\n# keep: flaky upstream\nx = 1\n\n[b]\ny = { assertions = 2, passes = 3, runs = 4 }\n")
    loaded = load_baseline(path)
    assert loaded == {"a": {"x": 1}, "b": {"y": 2}} and loaded["b"]["y"].runs == 4


# ---------------------------------------------------------------- escapes: \uXXXX must be a Unicode scalar value

escape = st.integers(0, 0xFFFF).map(lambda n: f"\\u{n:04x}") | st.integers(0xD800, 0xDFFF).map(lambda n: f"\\u{n:04X}")
escaped_name = st.lists(escape | st.sampled_from(["a", "\\\\", "\\n", "é"]), min_size=1, max_size=4).map("".join)
escaped_lines = st.builds(lambda k, n: f'"{k}" = {n}', escaped_name, st.integers(0, 9)) | st.builds(
    lambda k: f'["{k}"]', escaped_name) | st.just("[a]")


def _assert_the_fast_readers_take_it_as_tomllib_or_not_at_all(text: str) -> None:
    try:
        expected = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        expected = None
    for reader in (read_written_form, read_whole_written_form):
        fast = reader(text)
        assert fast is None or fast == expected, (reader.__name__, text)


@settings(max_examples=500, deadline=None)
@given(st.lists(escaped_lines, min_size=1, max_size=6))
def test_the_fast_readers_refuse_every_escape_toml_refuses(parts) -> None:
    text = "[a]\n" + "\n".join(parts) + "\n"
    _assert_the_fast_readers_take_it_as_tomllib_or_not_at_all(text)


def _one_line_table(table: str, key: str, value: str) -> str:
    if table == "/judges":
        return f'["/judges"]\n"{key}" = ["gpt-4o-mini#0123456789ab"]\n'
    return (f'["/settings"]\n"{key}" = {{ tier = "t1", repeat = 1, min_pass_rate = 1.0, alpha = 0.05, stop = "never", '
            f'skips = "skip", requires = ["{value}"], strict = false, network = "loopback", require_isolation = true, '
            f'key_vars = ["{value}"], replay_match = "request", strict_replay = true }}\n')


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["/settings", "/judges"]), escaped_name, escaped_name)
def test_the_fast_readers_refuse_every_escape_toml_refuses_in_the_settings_and_judges_tables(table, key, value) -> None:
    text = _one_line_table(table, key, value)
    _assert_the_fast_readers_take_it_as_tomllib_or_not_at_all(text)


@pytest.mark.parametrize(("table", "key", "value"), [
    ("/settings", "\\ud800", "env:K"), ("/settings", "a", "\\udfff"), ("/judges", "x\\uDBFF", ""),
])
def test_a_surrogate_escape_in_the_settings_or_judges_table_is_one_line_naming_the_line(tmp_path: Path, table: str,
                                                                                       key: str, value: str) -> None:
    text = _one_line_table(table, key, value)
    assert read_written_form(text) is None and read_whole_written_form(text) is None  # tomllib decides
    path = tmp_path / "t1.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError, match=r"/t1\.toml: line 2, column \d+: invalid TOML \(Escaped character is not a "
                                            r"Unicode scalar value\); fix that line or rerun evalrun baseline --update t1$"):
        load_baseline(path)

def test_a_surrogate_escape_in_a_baseline_is_one_line_naming_file_and_line(project) -> None:
    from harness import eval_entry, json_scorer

    proj = project({
        "manifest.toml": "[tiers.t1]\n" + eval_entry("a"),
        "evals/a/score.py": json_scorer([{"name": "one", "assertions": 1, "passed": True}]),
        "baselines/t1.toml": '[a]\none = 1\n"x\\ud800" = 1\n',
    })
    outcome = proj.run("t1")
    assert outcome.code == 2, outcome.output
    assert "baselines/t1.toml: line 3" in outcome.err and outcome.err.count("\n") == 1, outcome.err
    assert "internal error" not in outcome.output
