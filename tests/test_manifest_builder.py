"""The harness's manifest builder: the TOML it writes is read back by tomllib as the values it was given."""

from __future__ import annotations

import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Project, an_eval, eval_entry, manifest, replayed_pair
from harness.manifest_builder import toml_string, toml_text

keys = st.text(max_size=8)  # any string: bare where it may be, quoted and escaped where not
scalars = (
    st.text()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)  # nan != nan; inf and -inf are TOML's too
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
tables = st.dictionaries(keys, values, max_size=5)


@settings(max_examples=400, deadline=None)
@given(tables)
def test_tomllib_reads_back_what_was_rendered(table) -> None:
    assert tomllib.loads(toml_text(table)) == table


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_every_string_is_one_line_that_project_write_keeps(text) -> None:
    rendered = toml_string(text)
    assert "\n" not in rendered and "\r" not in rendered
    assert tomllib.loads(f"k = {rendered}\n") == {"k": text}


def test_an_eval_fills_the_common_keys_and_puts_its_files_in_its_folder(tmp_path) -> None:
    built = manifest(
        an_eval("a", files={"score.py": "print(1)\n"}),
        an_eval("b", ["node", "t.mjs"], tier="t2", dir="e", format="tap", env={"K": 'say "hi"\n'}),
        tiers={"t1": {}, "t2": {"require": ["env:DB"]}},
        models={"upstream": "http://127.0.0.1:1", "prices": {"m": {"input": 1.0, "output": 2.0}}},
    )
    Project(tmp_path).write(built.project({"e/t.mjs": ""}))
    assert tomllib.loads((tmp_path / "manifest.toml").read_text()) == {
        "tiers": {"t1": {}, "t2": {"require": ["env:DB"]}},
        "models": {"upstream": "http://127.0.0.1:1", "prices": {"m": {"input": 1.0, "output": 2.0}}},
        "evals": [
            {"name": "a", "tier": "t1", "dir": "evals/a", "run": ["python", "score.py"]},
            {"name": "b", "tier": "t2", "dir": "e", "run": ["node", "t.mjs"], "format": "tap",
             "env": {"K": 'say "hi"\n'}},
        ],
    }
    assert (tmp_path / "evals/a/score.py").read_text() == "print(1)\n"
    assert (tmp_path / "e/t.mjs").exists()


def test_eval_entry_keeps_its_text() -> None:
    """Tests edit eval_entry's text (``.replace('dir = "evals/a"', ...)``) and append raw keys to it."""
    assert eval_entry("a", extra="model = true") == (
        '[[evals]]\nname = "a"\ntier = "t1"\ndir = "evals/a"\nrun = ["python", "score.py"]\nmodel = true\n')
    assert eval_entry("café", run='["./x.sh", "a\\"b"]', tier="t3") == (
        '[[evals]]\nname = "café"\ntier = "t3"\ndir = "evals/café"\nrun = ["./x.sh", "a\\"b"]\n\n')


def test_a_replayed_pair_is_the_t2_eval_and_its_t3_twin_recording_for_it() -> None:
    built = manifest(*replayed_pair("chat", dir="e", timeout=60, files={"score.py": ""}))
    assert tomllib.loads(built.text)["evals"] == [
        {"name": "chat", "tier": "t2", "dir": "e", "run": ["python", "score.py"], "model": True, "timeout": 60},
        {"name": "chat-live", "tier": "t3", "dir": "e", "run": ["python", "score.py"], "model": True,
         "fixtures_for": "chat", "timeout": 60},
    ]
    assert built.files == {"e/score.py": ""}
