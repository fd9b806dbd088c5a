"""Malformed manifest, baseline and results files: the usual one-line exit 2, never a crash.

Each class the fuzzing found (deep nesting, 5,000-digit numbers, NUL or ``=``
in env names and values, non-UTF-8 results) has a CLI test; Hypothesis then
holds every parser to it for any bytes: a valid object or one line.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import an_eval, finishes, manifest

from evalrun.baseline import load_baseline
from evalrun.errors import EvalrunError
from evalrun.files import FileReadError, read_bounded
from evalrun.manifest import MANIFEST_LIMIT, load_manifest
from evalrun.results import load_results

EVAL = manifest(an_eval("a", dir="e")).text  # the malformed keys are appended to it as text
SCORER = "from evalrun import scorer\nwith scorer.check('ok') as c:\n    c.true(True)\n"
DEEP = 100_000
HUGE = "9" * 5000


def short_id(value: object) -> str | None:
    """A case's name for a long input: its length. pytest would name a case by its 200 KB manifest, and the
    name goes into PYTEST_CURRENT_TEST, past the kernel's 128 KiB for one environment string: no process
    the test starts could start (E2BIG), evalrun's included."""
    if isinstance(value, (str, bytes)) and len(value) >= 60:
        return f"{len(value)} {'characters' if isinstance(value, str) else 'bytes'}"
    return None  # pytest's own name


def assert_one_line(outcome, code: int = 2, name: str = "") -> None:
    assert outcome.code == code, outcome.output
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    assert len(lines) == 1, outcome.err
    assert name in lines[0], lines[0]
    assert "Traceback" not in outcome.output


@pytest.mark.parametrize(
    ("manifest", "problem"),
    [
        (EVAL + "x = " + "[" * DEEP + "]" * DEEP + "\n", "nested too deeply"),
        (EVAL + "timeout = " + HUGE + "\n", "shorten that number"),
        (EVAL + 'env = { "A\\u0000B" = "1" }\n', "a key contains a NUL character"),
        (EVAL + 'env = { A = "x\\u0000y" }\n', "evals[0].env.A: contains a NUL character"),
        (EVAL + 'env = { "A=B" = "1" }\n', "'A=B' is not a variable name"),
        (EVAL + 'env = { "" = "1" }\n', "is not a variable name"),
        ('[services.s]\nrun = ["true"]\nenv = { A = "\\u0000" }\n' + EVAL, "services.s.env.A: contains a NUL"),
    ],
    ids=short_id,
)
def test_a_malformed_manifest_is_one_line_exit_2(project, manifest: str, problem: str) -> None:
    proj = project({"manifest.toml": manifest, "e/score.py": SCORER})
    r = proj.run("t1")
    assert_one_line(r, name="manifest.toml")
    assert problem in r.err


@pytest.mark.parametrize(
    ("baseline", "problem"),
    [
        ('[a]\nok = ' + "[" * DEEP + "]" * DEEP + "\n", "nested too deeply"),
        ("[a]\nok = " + HUGE + "\n", "cannot be read"),
    ],
    ids=short_id,
)
def test_a_malformed_baseline_is_one_line_exit_2(project, baseline: str, problem: str) -> None:
    proj = project({"manifest.toml": EVAL, "e/score.py": SCORER, "baselines/t1.toml": baseline})
    r = proj.run("t1")
    assert_one_line(r, name="baselines/t1.toml")
    assert problem in r.err


BAD_RESULTS = [
    (b'{"version": 1, "tier": "t1", "evalrun_version": "\xff\xfe"}', "not UTF-8 text"),
    (b"[" * DEEP + b"]" * DEEP, "nested too deeply"),
    (b'{"version": ' + HUGE.encode() + b"}", "cannot be read"),
    (b"[1, 2]", "must be a JSON object"),
]


@pytest.mark.parametrize(("raw", "problem"), BAD_RESULTS, ids=short_id)
@pytest.mark.parametrize("command", ["merge", "diff", "shard"])
def test_a_malformed_results_file_is_one_line_exit_2(project, raw: bytes, problem: str, command: str) -> None:
    proj = project({"manifest.toml": EVAL, "e/score.py": SCORER, ".evalrun/results/t1.json": raw})
    args = {
        "merge": ("merge", ".evalrun/results/t1.json"),
        "diff": ("baseline", "diff", "t1"),
        "shard": ("t1", "--shard", "1/2"),
    }[command]
    r = proj.run(*args)
    assert_one_line(r, name="t1.json")
    assert problem in r.err


def test_a_manifest_and_a_baseline_saved_with_a_byte_order_mark_are_read(project) -> None:
    # Windows editors save UTF-8 with a BOM; TOML has none, and tomllib refuses it.
    bom = "\ufeff"
    proj = project({"manifest.toml": (bom + EVAL).encode(), "e/score.py": SCORER})
    assert proj.run("baseline", "--update", "t1").code == 0
    baseline = proj.root / "baselines" / "t1.toml"
    baseline.write_bytes(bom.encode() + baseline.read_bytes())
    r = proj.run("t1")
    assert r.code == 0, r.output
    assert "baseline" not in r.err


# A path may hold what no read may trust: a FIFO (a plain open blocks forever),
# /dev/zero (an endless read), a directory, or a file past the limit. Each is
# refused by what it is, before a byte is read, in one line naming the file.


def _plant(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()


UNTRUSTED = [
    ("fifo", "is a FIFO (named pipe), not a regular file"),
    ("dev-zero", "is a character device, not a regular file"),
    ("directory", "is a directory, not a file"),
]


@pytest.mark.parametrize(("kind", "says"), UNTRUSTED, ids=[k for k, _ in UNTRUSTED])
@pytest.mark.parametrize("which", ["manifest", "baseline", "results"])
def test_a_file_that_is_no_regular_file_is_refused_in_one_line_never_read(project, kind: str, says: str, which: str) -> None:
    proj = project({"manifest.toml": EVAL, "e/score.py": SCORER})
    target, args, fix = {
        "manifest": ("other.toml", ("dry", "--manifest", "other.toml"), "pass the manifest file with --manifest PATH"),
        "baseline": ("baselines/t1.toml", ("baseline", "diff", "t1"), "replace it with a baseline file"),
        "results": ("shard.json", ("merge", "shard.json"), "pass the results file evalrun wrote"),
    }[which]
    if which == "baseline":
        assert proj.run("t1").code == 0  # a results file to compare
    _plant(proj.root / target, kind)
    r = finishes(lambda: proj.run(*args))  # a FIFO opened without O_NONBLOCK would hang here
    assert_one_line(r, name=Path(target).name)
    assert f"{says}; {fix}" in r.err


def test_a_manifest_past_the_limit_is_refused_in_one_line(project) -> None:
    proj = project({"e/score.py": SCORER})
    with open(proj.root / "manifest.toml", "wb") as handle:
        handle.write(EVAL.encode())
        handle.truncate(MANIFEST_LIMIT + 1)  # sparse: NUL bytes past the evals, never written to disk
    r = proj.run("dry")
    assert_one_line(r, name="manifest.toml")
    assert "is larger than 16 MiB, the most evalrun reads from a manifest" in r.err


def test_read_bounded_takes_exactly_the_limit_and_refuses_a_byte_more(tmp_path: Path) -> None:
    exact, over = tmp_path / "exact", tmp_path / "over"
    exact.write_bytes(b"x" * 3000)
    over.write_bytes(b"x" * 3001)
    assert read_bounded(exact, 3000, "a test file") == b"x" * 3000
    with pytest.raises(FileReadError, match="^is larger than 3000 bytes, the most evalrun reads from a test file$"):
        read_bounded(over, 3000, "a test file")
    with pytest.raises(FileReadError) as missing:
        read_bounded(tmp_path / "nope", 3000, "a test file")
    assert missing.value.missing


# --------------------------------------------------------------------------- properties

SETTINGS = settings(
    max_examples=100,
    deadline=None,  # the machine is shared: time is bounded by the input sizes, never by a stopwatch
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


def fragments(pieces: list[str]) -> st.SearchStrategy[bytes]:
    """Documents made of meaningful pieces and noise: deeper than random bytes get."""
    piece = st.one_of(st.sampled_from(pieces), st.text(max_size=20))
    made = st.lists(piece, max_size=25).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))
    return st.one_of(st.binary(max_size=400), made)


MANIFEST_PIECES = [
    "[[evals]]\n", 'name = "a"\n', 'name = "b\\r"\n', 'tier = "t1"\n', 'tier = "t2"\n', 'tier = "t9"\n',
    'dir = "e"\n', 'dir = "../.."\n', 'run = ["true"]\n', "run = []\n", "timeout = 0\n", f"timeout = {HUGE}\n",
    'env = { A = "1" }\n', 'env = { "A=B" = "1" }\n', 'env = { A = "\\u0000" }\n', 'env = { OPENAI_API_KEY = "x" }\n',
    'env = { T = "${OPENAI_API_KEY}" }\n', 'format = "junit"\n', 'junit = "/tmp/victim"\n', 'junit = "../x"\n',
    '[services.s]\n', 'run = ["x"]\n', 'postgres = "embedded"\n', 'services = ["s"]\n', "[probes.p]\n",
    'command = ["x"]\n', 'requires = ["p"]\n', 'requires = ["tcp:"]\n', "[tiers.t1]\n", 'require = ["env:X"]\n',
    "[models]\n", 'key_vars = ["K"]\n', "[baseline]\n", "strict = true\n", "x = " + "[" * 3000, '"\\n" = 1\n',
    "= = =\n", "\x00", "\ufeff",
]


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "e").mkdir()
        yield root


def assert_value_or_one_line(load, path: Path) -> None:
    try:
        load(path)
    except EvalrunError as exc:
        assert "\n" not in str(exc) and "\r" not in str(exc), str(exc)
        assert path.name in str(exc), str(exc)


@SETTINGS
@given(raw=fragments(MANIFEST_PIECES))
def test_any_manifest_bytes_give_a_manifest_or_one_line(workdir: Path, raw: bytes) -> None:
    path = workdir / "manifest.toml"
    path.write_bytes(raw)
    assert_value_or_one_line(load_manifest, path)


BASELINE_PIECES = [
    "[a]\n", '["b c"]\n', "ok = 1\n", "ok = -1\n", "ok = true\n", "ok = 1.5\n", f"ok = {HUGE}\n", 'ok = "x"\n',
    "ok = [" * 3000, "x = 1979-05-27\n", '"\\n" = 2\n', "[a.b]\n", "c = 3\n", "= 1\n", "\x00",
]


@SETTINGS
@given(raw=fragments(BASELINE_PIECES))
def test_any_baseline_bytes_give_a_baseline_or_one_line(workdir: Path, raw: bytes) -> None:
    path = workdir / "t1.toml"
    path.write_bytes(raw)
    assert_value_or_one_line(load_baseline, path)


VALID_RESULTS = {
    "version": 1, "evalrun_version": "0", "tier": "t1", "manifest": "m", "started_at": "now",
    "evals": [{"name": "a", "tier": "t1", "dir": "e", "status": "passed",
               "checks": [{"name": "c", "assertions": 1, "passed": True}]}],
}
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=10,
)


@st.composite
def mutated_results(draw: st.DrawFn) -> bytes:
    """A valid results file with one value replaced by anything, or a hostile literal spliced in."""
    data = json.loads(json.dumps(VALID_RESULTS))
    eval_ = data["evals"][0]
    target = draw(st.sampled_from([data, eval_, eval_["checks"][0]]))
    key = draw(st.one_of(st.sampled_from(sorted(target)), st.text(max_size=5)))
    target[key] = draw(JSON_VALUES)
    text = json.dumps(data)
    hostile = draw(st.sampled_from(["", "[" * 5000 + "]" * 5000, HUGE, '"\\ud800"', "\n\r"]))
    if hostile:
        text = text.replace('"c"', hostile, 1)
    return text.encode("utf-8")


@SETTINGS
@given(raw=st.one_of(st.binary(max_size=400), mutated_results()))
def test_any_results_bytes_give_results_or_one_line(workdir: Path, raw: bytes) -> None:
    path = workdir / "t1.json"
    path.write_bytes(raw)
    assert_value_or_one_line(load_results, path)
