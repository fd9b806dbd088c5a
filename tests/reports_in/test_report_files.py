"""Reading what a scorer left, whatever it left: FIFOs, directories, devices, floods, deep nesting.

Every reader (JSON report, TAP, JUnit) refuses what is not a regular file,
reads at most REPORT_LIMIT bytes, and turns anything Python cannot hold into
a one-line ReportError or a TAP problem; the scratch folder survives a scorer
that removes it; an exception while judging fails that eval alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalrun.errors import ReportError
from evalrun.run.outcome import judge_outcome as _judge_outcome
from evalrun.scratch import Scratch
from evalrun.manifest import EvalSpec
from evalrun.plan import PlannedEval
from evalrun.process import ProcessOutcome
from evalrun.reports_in.json_report import read_json_report
from evalrun.reports_in.junit import parse_junit
from evalrun.reports_in.parsed import REPORT_LIMIT
from evalrun.reports_in.tap import LINE_LIMIT, parse_tap
from evalrun.results import Status
from evalrun.text import EVIDENCE_LIMIT, MESSAGE_LIMIT

BIG = "9" * 5000
READERS = {
    "json": lambda p: read_json_report(p),
    "junit": lambda p: parse_junit(p),
    "tap": lambda p: parse_tap(p),
}


def _outcome_of(reader: str, path: Path) -> str:
    """The one line a reader gives for ``path``: its ReportError, or its TAP problem."""
    result: list[str] = []

    def read() -> None:
        try:
            result.append(str(READERS[reader](path).problem))
        except ReportError as exc:
            result.append(str(exc))

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(120)  # a hang detector, not a stopwatch: a FIFO used to block here forever
    assert not worker.is_alive(), f"{reader} blocked reading {path}"
    return result[0]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_fifo_is_refused_without_blocking(tmp_path: Path, reader: str) -> None:
    fifo = tmp_path / "report"
    os.mkfifo(fifo)
    assert "is a FIFO (named pipe), not a regular file" in _outcome_of(reader, fifo)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_directory_is_refused(tmp_path: Path, reader: str) -> None:
    (tmp_path / "report").mkdir()
    assert "is a directory" in _outcome_of(reader, tmp_path / "report")


@pytest.mark.parametrize("reader", sorted(READERS))
def test_symlink_to_dev_zero_is_refused(tmp_path: Path, reader: str) -> None:
    (tmp_path / "report").symlink_to("/dev/zero")
    assert "is a character device, not a regular file" in _outcome_of(reader, tmp_path / "report")


@pytest.mark.parametrize("reader", sorted(READERS))
def test_file_over_the_cap_is_refused(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "report"
    with path.open("wb") as handle:
        handle.write(b"<testsuite>")  # valid so far in XML: the size, not the syntax, stops the read
        handle.write(b" " * REPORT_LIMIT)
    assert "is larger than 32 MiB, the most evalrun reads from one report" in _outcome_of(reader, path)


def test_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps({"checks": [{"name": "a", "assertions": 1, "passed": True}]}))
    (tmp_path / "report.json").symlink_to(real)

    assert [c.name for c in read_json_report(tmp_path / "report.json").checks] == ["a"]


# --- JSON -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "invalid report: nested too deeply to read"),
        ('{"checks": [{"name": "a", "assertions": ' + BIG + ', "passed": true}]}',
         "invalid report: not JSON (a number has more digits than Python reads (4300))"),
        ('{"checks": [], "metrics": {"x": ' + BIG + "}}",
         "invalid report: not JSON (a number has more digits than Python reads (4300))"),
        ('{"checks": [], "metrics": {"x": NaN}}', "invalid report: NaN is not a finite number"),
        ('{"checks": [], "metrics": {"x": 1e999}}', "invalid report: 1e999 is not a finite number"),
        ('{"checks": [{"name": "a", "assertions": 1000000001, "passed": true}]}',
         "invalid report: checks[0].assertions: 1000000001 is greater than the maximum of 1000000000"),
        ('{"checks": [{"name": "' + "n" * 1001 + '", "assertions": 1, "passed": true}]}',
         "invalid report: checks[0].name: "),
    ],
    # a long input is named by its length: its text would go into PYTEST_CURRENT_TEST (100 KB here)
    ids=lambda value: f"{len(value)} characters" if len(value) >= 60 else None,
)
def test_json_that_python_cannot_hold_is_an_invalid_report(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "report.json"
    path.write_text(text)

    with pytest.raises(ReportError) as info:
        read_json_report(path)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value) and len(str(info.value)) <= 600


def test_many_thousand_schema_errors_are_one_bounded_line(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"checks": [1] * 90_000}))

    with pytest.raises(ReportError, match=r"^invalid report: checks\[0\]: 1 is not of type 'object' \(and more\)$"):
        read_json_report(path)


def test_json_messages_evidence_and_metrics_are_cut_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    check = {"name": "flood", "assertions": 1, "passed": False, "message": "m" * 100_000, "evidence": "e" * 5_000_000}
    path.write_text(json.dumps({"checks": [check], "metrics": {"log": "l" * 100_000, "n": 1}}))

    report = read_json_report(path)

    flood = report.checks[0]
    assert flood.message == "m" * MESSAGE_LIMIT + f"... ({100_000 - MESSAGE_LIMIT} more characters cut)"
    assert flood.evidence is not None and flood.evidence.endswith("more bytes cut)")
    assert len(flood.evidence.encode()) < EVIDENCE_LIMIT + 100
    assert report.metrics["log"].endswith("more characters cut)") and report.metrics["n"] == 1


def test_secrets_are_scrubbed_before_the_cut(tmp_path: Path) -> None:
    key = "sk-test-" + os.urandom(22).hex()
    path = tmp_path / "report.json"
    message = "x" * (MESSAGE_LIMIT - 10) + key  # the cut falls inside the key
    evidence = "y" * (EVIDENCE_LIMIT - 10) + key
    check = {"name": f"named {key}", "assertions": 1, "passed": False, "message": message, "evidence": evidence}
    path.write_text(json.dumps({"checks": [check]}))

    flood = read_json_report(path, secrets={key}).checks[0]

    for text in (flood.message or "", flood.evidence or ""):
        assert not any(key[i : i + 8] in text for i in range(len(key) - 7))
    assert "[redacted" in (flood.message or "")


# --- TAP ------------------------------------------------------------------------


def test_tap_numbers_of_thousands_of_digits_are_problems(tmp_path: Path) -> None:
    path = tmp_path / "out.tap"
    path.write_text(f"1..{BIG}\nok {BIG} - huge\nok 2 - fine\n")

    report = parse_tap(path)

    assert [c.name for c in report.checks] == ["huge", "fine"]
    assert report.problem is not None
    assert report.problem.startswith("the plan's count has more than 18 digits; ran 2; test point numbered 999")


def test_tap_subtest_plan_of_thousands_of_digits(tmp_path: Path) -> None:
    path = tmp_path / "out.tap"
    path.write_text(f"    1..{BIG}\n    ok 1 - inner\nok 1 - outer\n1..1\n")

    check = parse_tap(path).checks[0]

    assert (check.name, check.passed) == ("outer", False)
    assert check.message == "subtest's plan has more than 18 digits; ran 1"


def test_tap_long_line_is_cut_and_the_stream_read_on(tmp_path: Path) -> None:
    path = tmp_path / "out.tap"
    with path.open("w") as handle:
        handle.write("1..2\nok 1 - " + "x" * (4 * LINE_LIMIT) + " # SKIP lost in the cut\nok 2 - after\n")

    report = parse_tap(path)

    assert report.problem is None
    first, second = report.checks
    assert first.name.startswith("xxx") and len(first.name) <= 1000
    assert second.name == "after"


def test_tap_many_hashes_are_read_in_one_pass(tmp_path: Path) -> None:
    path = tmp_path / "out.tap"
    path.write_text("1..2\nok 1 - " + "# " * 30_000 + "# SKIP too many hashes\nok 2 - " + "\\#" * 20_000 + "\n")

    report = parse_tap(path)

    # the hashes that start no directive are the description, the last one is the SKIP
    assert len(report.skipped) == 1 and report.skipped[0].endswith("# # #… (too many hashes)")
    assert report.checks[0].name == "#" * 999 + "…"  # escaped hashes, the name capped at 1000


def test_tap_over_the_cap_keeps_what_was_read(tmp_path: Path) -> None:
    path = tmp_path / "out.tap"
    with path.open("wb") as handle:
        handle.write(b"ok 1 - read\n")
        handle.truncate(REPORT_LIMIT + 1)

    report = parse_tap(path)

    assert [c.name for c in report.checks][:1] == ["read"]
    assert report.problem is not None and "is larger than 32 MiB" in report.problem


MEASURE = """
import resource, sys
from pathlib import Path
from evalrun.reports_in.tap import parse_tap
report = parse_tap(Path(sys.argv[1]))
# VmHWM, not ru_maxrss: Linux carries the forking test worker's peak into ru_maxrss.
print(len(report.checks), next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")))
"""


def test_one_huge_tap_line_takes_bounded_memory(tmp_path: Path) -> None:
    """Issue 11: a 64 MiB line took 853 MB; now the line is cut as it is read."""
    path = tmp_path / "out.tap"
    with path.open("wb") as handle:
        handle.write(b"ok 1 - ")
        block = b"#x" * (1024 * 1024)
        for _ in range(15):  # 30 MiB, under the 32 MiB cap: the line cap does the work
            handle.write(block)
        handle.write(b"\n1..1\n")
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True, check=True)
    checks, peak_kib = map(int, proc.stdout.split())

    assert checks == 1
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib} KiB"


# --- JUnit ----------------------------------------------------------------------


def test_junit_deep_nesting_is_read_without_recursion(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    depth = 100_000
    path.write_text('<testsuite name="s">' * depth + '<testcase name="x"/>' + "</testsuite>" * depth)

    check = parse_junit(path).checks[0]

    assert check.name.startswith("s > s > ") and len(check.name) <= 1000 and check.passed


def test_junit_failure_text_of_megabytes_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(f'<testsuite><testcase name="x"><failure message="{"m" * 100_000}">{"E" * 10_000_000}</failure>'
                    "</testcase></testsuite>")

    check = parse_junit(path).checks[0]

    assert check.message is not None and len(check.message) <= MESSAGE_LIMIT
    assert check.evidence is not None and len(check.evidence.encode()) < EVIDENCE_LIMIT + 100


# --- the scratch folder and the judging of one eval ------------------------------


def test_scratch_survives_a_scorer_that_removed_or_replaced_it(tmp_path: Path) -> None:
    scratch = Scratch(tmp_path / "scratch" / "worker-0")
    work, report = scratch.fresh()
    import shutil

    shutil.rmtree(tmp_path / "scratch")  # the scorer deleted its scratch parent
    work, report = scratch.fresh()
    assert work.is_dir() and not any(work.iterdir()) and not report.exists()

    os.mkdir(report)  # a directory at the report path
    (work / "left").write_text("x")
    work, report = scratch.fresh()
    assert not report.exists() and not any(work.iterdir())

    shutil.rmtree(scratch.root)
    outside = tmp_path / "outside"
    outside.mkdir()
    scratch.root.symlink_to(outside)  # the worker folder replaced by a link elsewhere
    work, report = scratch.fresh()
    assert not scratch.root.is_symlink() and scratch.root.is_dir() and work.parent.parent == scratch.root
    assert not any(outside.iterdir())

    (scratch.root / "used-1").mkdir(exist_ok=True)  # a scorer squats the names a workdir is moved aside to
    (scratch.root / "used-1" / "squat").write_text("x")
    (work / "left").mkdir()
    (work / "left" / "locked").mkdir()
    (work / "left" / "locked" / "f").write_text("x")
    (work / "left" / "locked").chmod(0)
    work, report = scratch.fresh()
    assert work.is_dir() and not any(work.iterdir())

    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.rmtree(work)
    work.symlink_to(empty)  # the workdir replaced by a link to an empty folder
    work, report = scratch.fresh()
    assert work.is_dir() and not work.is_symlink()


def test_an_exception_while_judging_fails_that_eval_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"checks": [{"name": "a", "assertions": 1, "passed": True}]}))
    planned = PlannedEval(EvalSpec(name="e", tier="t1", dir="e", run=["true"]), tmp_path)
    outcome = ProcessOutcome(
        argv=("true",), exit_code=0, timed_out=False, cancelled=False, start_error=None, duration_s=0.1,
        stdout_tail=b"", stderr_tail=b"", stdout_bytes=0, stderr_bytes=0,
    )

    def broken(*_args: object) -> None:
        raise ZeroDivisionError("a bug in the rules")

    monkeypatch.setattr("evalrun.run.outcome.judge", broken)
    result = _judge_outcome(planned, "t1", outcome, report, None, 0.1)

    assert result.status is Status.ERROR
    assert result.message == "invalid report: evalrun could not judge it (ZeroDivisionError: a bug in the rules)"


def test_json_report_of_more_checks_than_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"checks": [{"name": "a", "assertions": 1, "passed": True}] * 100_001}))

    with pytest.raises(ReportError, match=r"^invalid report: checks: 100,001 checks, more than the 100,000 evalrun reads$"):
        read_json_report(path)


def test_tap_stream_of_more_points_than_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "out.tap"
    path.write_text("ok\n" * 100_001)

    report = parse_tap(path)

    assert len(report.checks) == 100_000
    assert report.problem == "more than 100,000 test points, the most evalrun reads from one stream"


def test_junit_of_more_testcases_than_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text("<testsuite>\n" + '<testcase name="a"/>\n' * 100_001 + "</testsuite>\n")

    with pytest.raises(ReportError, match=r"^junit report r\.xml: line 100002: more than 100,000 testcases"):
        parse_junit(path)
