"""Reading the logs Inspect AI wrote into checks (``format = "inspect"``).

evalrun points Inspect at a fresh log folder (``INSPECT_LOG_DIR``, inside the
run's ``EVALRUN_WORKDIR``), so every log found there was written by this run
and none is stale. Each log there (``.eval``, Inspect's zip, or ``.json``) is
read; this module owns what a log means to evalrun:

- one check per sample and scorer, named ``TASK > SAMPLE-ID > SCORER``: the
  sample's id, never its position (a task evaluated with several models in
  one run names the model too: ``TASK (MODEL) > ...``);
- a score passes when Inspect's own value-to-float reads it as 1.0: ``"C"``
  (CORRECT), ``True``, ``1``/``1.0``, ``"yes"``/``"true"``; ``"I"``, ``"P"``
  (partial, 0.5), ``"N"``, ``0.7`` fail. A dict or list value (a scorer of
  several values) passes when each of its values does, and each counts as one
  assertion;
- with several epochs, a sample's epochs are one check: each epoch counts as
  assertions, and it passes only if every epoch passed (fewer epochs: asserts
  less);
- an errored sample (``--no-fail-on-error``, ``fail_on_error=False``) fails each
  of its checks with Inspect's error message: Inspect marks such a log
  ``success`` and exits 0, evalrun does not;
- a log whose status is ``error``, ``cancelled`` or still ``started`` fails the
  eval with the task's error (Inspect exits 0 when a task errors);
- the scorers' metrics (``accuracy``, ``stderr``...) become the eval's metrics,
  named ``TASK/SCORER/METRIC``.

Every read is bounded: the log file (``evalrun.files``), each zip member as it
is decompressed (a zip bomb stops at the limit; 1 GiB for the whole .eval), the
members and samples read, and the JSON values parsed at once (VALUE_LIMIT: bytes
alone do not bound the memory Python objects take).
Inspect compresses ``.eval`` members with zstandard: Python 3.14's
``compression.zstd`` or the ``zstandard`` package reads them (``pip install
'evalrun[inspect]'``; Inspect itself depends on it).
"""

from __future__ import annotations

import io
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalrun.errors import ReportError
from evalrun.files import FileReadError, read_bounded
from evalrun.reports_in.parsed import ASSERTIONS_LIMIT, CHECK_LIMIT, NAME_LIMIT, REPORT_LIMIT, ParsedReport
from evalrun.reports_in.tool_json import (
    METRIC_LIMIT,
    TOOL_LOG_LIMIT,
    TOOL_LOG_WHAT,
    load_json,
    metric_value,
    obj,
    scalar_text,
    text_of,
)
from evalrun.results import CheckResult
from evalrun.secrets import scrub
from evalrun.text import one_line, shorten, truncate

LOG_FILE_LIMIT = 100  # log files read from one run's folder: tasks x models of one eval
MEMBER_LIMIT = REPORT_LIMIT  # bytes of one decompressed zip member (header.json, one sample)
TOTAL_LIMIT = 1024**3  # decompressed bytes of one .eval in all
# JSON values (objects, arrays, strings, numbers) parsed at once: a .json log, or one member of a .eval (its
# header, one sample). Bytes alone do not bound memory: 32 MiB of "{}," is 11 million dicts, 0.9 GB. At the
# limit a log costs at most ~300 MB of objects beyond its text; a real sample holds a few thousand values.
VALUE_LIMIT = 4_000_000
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_MEMBERS = CHECK_LIMIT + 100  # zip entries looked at: one per sample, a few more
_ZSTD = 93  # the zip compression method Inspect writes
_NOT_LOGS = {"logs.json", "eval-set.json"}  # eval-set's listing files, beside the logs
_FIX = "point Inspect at the log folder evalrun gives it ($INSPECT_LOG_DIR) and let it finish its log"
_CORRECT = {"c", "yes", "true"}  # Inspect's value_to_float: "C" is CORRECT; "yes"/"true" read as 1


@dataclass
class _Check:
    name: str
    assertions: int = 0
    failures: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)


@dataclass
class _Log:
    file: str
    task: str
    model: str
    status: str
    error: str
    samples: Iterator[dict[str, Any]]
    header: dict[str, Any]


def parse_inspect(log_dir: Path, label: str, secrets: Iterable[str] = ()) -> ParsedReport:
    """The checks of every Inspect log in ``log_dir``; ``label`` names the folder in messages."""
    secrets = tuple(s for s in secrets if s)
    files = _log_files(log_dir, label)
    logs = [_open_log(log_dir / name, f"{label}/{name}") for name in files]
    models: dict[str, set[str]] = {}
    for log in logs:
        models.setdefault(log.task, set()).add(log.model)
    checks: dict[str, _Check] = {}
    metrics: dict[str, Any] = {}
    problems: list[str] = []
    seen_tasks: dict[str, str] = {}
    for log in logs:
        task = log.task if len(models[log.task]) == 1 else f"{log.task} ({log.model})"
        task = scrub(task, secrets)
        if task in seen_tasks:
            raise ReportError(
                f"inspect log {log.file}: task {shorten(task, 80)!r} is also in {seen_tasks[task]}; "
                f"run each task once per eval (or split it into evals)"
            )
        seen_tasks[task] = log.file
        if log.status != "success":
            problems.append(_status_problem(log, task, secrets))
        _read_samples(log, task, checks, secrets)
        _read_metrics(log.header, task, metrics, secrets)
    problem = "; ".join(problems) if problems else None
    if not checks and problem is None:
        problem = f"the Inspect {'logs' if len(logs) > 1 else 'log'} in {label} {'hold' if len(logs) > 1 else 'holds'} no scored samples"
    return ParsedReport(
        checks=[_finish(c) for c in checks.values()], metrics=metrics, problem=problem, source="Inspect"
    )


def _log_files(log_dir: Path, label: str) -> list[str]:
    try:
        with os.scandir(log_dir) as entries:
            names = []
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name in _NOT_LOGS or not name.endswith((".eval", ".json")):
                    continue
                names.append(name)
                if len(names) > LOG_FILE_LIMIT:
                    raise ReportError(
                        f"inspect logs {label}: more than {LOG_FILE_LIMIT} log files, the most evalrun reads "
                        f"from one run; split the tasks into evals"
                    )
    except FileNotFoundError:
        names = []
    except NotADirectoryError:
        raise ReportError(f"inspect logs {label}: is not a folder; {_FIX}") from None
    except OSError as exc:
        raise ReportError(f"inspect logs {label}: cannot list it ({exc.strerror}); {_FIX}") from None
    if not names:
        raise ReportError(
            f"inspect logs {label}: Inspect wrote no log there; evalrun sets INSPECT_LOG_DIR for the scorer, "
            f"so drop any --log-dir (or log_dir=) from the run"
        )
    return sorted(names)  # Inspect's names start with the time: oldest first


def _read(path: Path, where: str) -> bytes:
    try:
        return read_bounded(path, TOOL_LOG_LIMIT, TOOL_LOG_WHAT)
    except FileReadError as exc:
        raise ReportError(f"inspect log {where}: {exc.reason}; {_FIX}") from None


def _open_log(path: Path, where: str) -> _Log:
    raw = _read(path, where)
    if path.name.endswith(".json"):
        data = _load(raw, f"inspect log {where}", "let Inspect write .eval logs (its default), read a sample at a time")
        if not isinstance(data, dict) or not isinstance(data.get("eval"), dict):
            raise ReportError(f"inspect log {where}: not an Inspect log (no \"eval\" object); {_FIX}")
        samples = data.get("samples")
        listed = samples if isinstance(samples, list) else []
        return _log(where, data, iter(listed))
    return _open_eval(raw, where)


def _log(where: str, header: dict[str, Any], samples: Iterator[Any]) -> _Log:
    spec = obj(header.get("eval"))
    error = obj(header.get("error"))
    return _Log(
        file=where,
        task=shorten(one_line(text_of(spec.get("task")) or "task"), 200),
        model=shorten(one_line(text_of(spec.get("model")) or "model"), 200),
        status=text_of(header.get("status")) or "started",
        error=text_of(error.get("message")) or _last_line(text_of(error.get("traceback"))),
        samples=samples,
        header=header,
    )


def _open_eval(raw: bytes, where: str) -> _Log:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, struct.error) as exc:
        why = shorten(one_line(str(exc)), 120)
        raise ReportError(f"inspect log {where}: not an Inspect .eval file ({why}); {_FIX}") from None
    if len(infos) > _MEMBERS:
        raise ReportError(f"inspect log {where}: more than {_MEMBERS:,} members, more than evalrun reads; {_FIX}")
    members = {info.filename: info for info in infos}
    budget = [TOTAL_LIMIT]
    header_info = members.get("header.json")
    if header_info is not None:
        header = _member_json(archive, raw, header_info, where, budget)
    else:  # the run stopped before it finished the log: its start record still names the task
        start = members.get("_journal/start.json")
        header = _member_json(archive, raw, start, where, budget) if start is not None else {}
        header = {**header, "status": "started"}
    if not isinstance(header.get("eval"), dict):
        raise ReportError(f"inspect log {where}: not an Inspect log (no \"eval\" object in header.json); {_FIX}")
    sample_infos = [i for i in infos if i.filename.startswith("samples/") and i.filename.endswith(".json")]
    samples = (_member_json(archive, raw, info, where, budget) for info in sample_infos)
    return _log(where, header, samples)


def _member_json(archive: zipfile.ZipFile, raw: bytes, info: zipfile.ZipInfo, where: str, budget: list[int]) -> Any:
    place = f"inspect log {where}: {shorten(info.filename, 120)}"
    data = _member_bytes(archive, raw, info, place, min(MEMBER_LIMIT, budget[0]), in_all=budget[0] < MEMBER_LIMIT)
    budget[0] -= len(data)
    value = _load(data, place, "split the task's samples smaller")
    if not isinstance(value, dict):
        raise ReportError(f"{place}: not a JSON object; {_FIX}")
    return value


def json_values(raw: bytes) -> int:
    """How many JSON values ``json.loads(raw)`` would make (keys aside: the parser shares them), counted
    without making them: one per comma and per non-empty container, plus the root."""
    bare = _STRING.sub(b'""', raw)
    return 1 + bare.count(b",") + bare.count(b"[") + bare.count(b"{") - bare.count(b"[]") - bare.count(b"{}")


def _load(raw: bytes, place: str, fix: str) -> Any:
    """``raw`` as JSON, refused in one line before parsing when it holds more than VALUE_LIMIT values."""
    if len(raw) > VALUE_LIMIT and json_values(raw) > VALUE_LIMIT:  # every value takes at least a byte
        raise ReportError(
            f"{place}: holds more than {VALUE_LIMIT:,} JSON values, more than evalrun holds in memory at once; {fix}"
        )
    return load_json(raw, place, _FIX)


def _member_bytes(archive: zipfile.ZipFile, raw: bytes, info: zipfile.ZipInfo, place: str, limit: int,
                  in_all: bool = False) -> bytes:
    """One member, decompressed up to ``limit`` bytes: a member that inflates past it is refused
    (``in_all``: the limit is what is left of TOTAL_LIMIT, the most one .eval decompresses to)."""
    try:
        if info.compress_type == _ZSTD:
            data = _unzstd(_raw_member(raw, info, place), limit + 1, place)
        elif info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            with archive.open(info) as member:
                data = member.read(limit + 1)
        else:
            raise ReportError(f"{place}: compression method {info.compress_type} is not one Inspect writes; {_FIX}")
    except ReportError:
        raise
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError, EOFError, OSError, zlib.error,
            struct.error) as exc:
        raise ReportError(f"{place}: cannot be decompressed ({shorten(one_line(str(exc)), 120)}); {_FIX}") from None
    if len(data) > limit:
        if in_all:
            raise ReportError(f"{place}: the log decompresses to more than {_mib(TOTAL_LIMIT)} MiB in all, the "
                              f"most evalrun reads from one .eval; split the task's samples into several tasks")
        raise ReportError(f"{place}: decompresses to more than {_mib(limit)} MiB, the most evalrun reads")
    return data


def _mib(limit: int) -> str:
    return f"{limit / (1024 * 1024):g}"


def _raw_member(raw: bytes, info: zipfile.ZipInfo, place: str) -> bytes:
    """The compressed bytes of a member, found through its local header (the stdlib cannot inflate zstd)."""
    start = info.header_offset
    head = raw[start : start + 30]
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise ReportError(f"{place}: its local header is missing; {_FIX}")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    begin = start + 30 + name_len + extra_len
    end = begin + info.compress_size
    if end > len(raw):
        raise ReportError(f"{place}: cut short; {_FIX}")
    return raw[begin:end]


def _unzstd(data: bytes, cap: int, place: str) -> bytes:
    """At most ``cap`` bytes of zstandard data, across frames (Inspect writes a frame per chunk)."""
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+
    except ImportError:
        zstd = None
    if zstd is not None:
        try:
            with zstd.ZstdFile(io.BytesIO(data)) as reader:
                return reader.read(cap)
        except zstd.ZstdError as exc:
            raise ReportError(f"{place}: not valid zstandard data ({shorten(one_line(str(exc)), 120)})") from None
    try:
        import zstandard
    except ImportError:
        raise ReportError(
            f"{place}: is zstandard-compressed and this Python cannot read it; install zstandard "
            f"(pip install 'evalrun[inspect]') or let Inspect write JSON logs (INSPECT_LOG_FORMAT=json)"
        ) from None
    chunks: list[bytes] = []
    total = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            while total < cap and (chunk := reader.read(min(1024 * 1024, cap - total))):
                chunks.append(chunk)
                total += len(chunk)
    except zstandard.ZstdError as exc:
        raise ReportError(f"{place}: not valid zstandard data ({shorten(one_line(str(exc)), 120)})") from None
    return b"".join(chunks)


def _status_problem(log: _Log, task: str, secrets: tuple[str, ...]) -> str:
    error = scrub(one_line(log.error, 400), secrets)
    if log.status == "error":
        return f"Inspect task {task} ended in error: {error or 'no message'}"
    if log.status == "cancelled":
        return f"Inspect task {task} was cancelled" + (f": {error}" if error else "")
    if log.status == "started":
        return f"Inspect task {task} did not finish its log (status started): the run stopped midway"
    return f"Inspect task {task} has status {shorten(log.status, 40)!r}, not success"


def _scorer_names(header: dict[str, Any]) -> list[str]:
    spec = obj(header.get("eval"))
    listed = spec.get("scorers")
    names = [text_of(obj(s).get("name")) for s in listed] if isinstance(listed, list) else []
    if not any(names):
        scores = obj(header.get("results")).get("scores")
        names = [text_of(obj(s).get("name")) for s in scores] if isinstance(scores, list) else []
    return list(dict.fromkeys(n for n in names if n))


def _read_samples(log: _Log, task: str, checks: dict[str, _Check], secrets: tuple[str, ...]) -> None:
    scorers = _scorer_names(log.header)
    for sample in log.samples:
        if not isinstance(sample, dict):
            raise ReportError(f"inspect log {log.file}: a sample is not a JSON object; {_FIX}")
        sample_id = sample.get("id")
        if not isinstance(sample_id, (str, int)) or isinstance(sample_id, bool):
            raise ReportError(f"inspect log {log.file}: a sample has no id (a string or a number); {_FIX}")
        epoch = sample.get("epoch")
        epoch_note = f"epoch {epoch}: " if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch > 1 else ""
        base = f"{task} > {scrub(scalar_text(sample_id, 300), secrets)}"
        scores = obj(sample.get("scores"))
        error = obj(sample.get("error"))
        if sample.get("error") is not None:
            message = text_of(error.get("message")) or _last_line(text_of(error.get("traceback"))) or "errored"
            message = scrub(one_line(message, 400), secrets)
            names = list(dict.fromkeys([*scores, *scorers])) or [""]
            for scorer in names:
                check = _check(checks, _name(base, scorer, secrets))
                check.assertions += 1
                check.failures.append(f"{epoch_note}sample errored: {message}")
                check.evidence.append(scrub(truncate(text_of(error.get("traceback")), 2000), secrets))
            continue
        for scorer, score in scores.items():
            check = _check(checks, _name(base, scorer, secrets))
            _judge_score(check, obj(score), epoch_note, secrets)


def _name(base: str, scorer: str, secrets: tuple[str, ...]) -> str:
    if not scorer:
        return shorten(base, NAME_LIMIT)
    return shorten(f"{base} > {scrub(one_line(scorer, 200), secrets)}", NAME_LIMIT)


def _check(checks: dict[str, _Check], name: str) -> _Check:
    check = checks.get(name)
    if check is None:
        if len(checks) >= CHECK_LIMIT:
            raise ReportError(f"inspect logs: more than {CHECK_LIMIT:,} sample scores, the most evalrun reads")
        check = checks[name] = _Check(name)
    return check


def _judge_score(check: _Check, score: dict[str, Any], epoch_note: str, secrets: tuple[str, ...]) -> None:
    value = score.get("value")
    values = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else [value]
    check.assertions += max(len(values), 1)
    failed = [v for v in values if not _correct(v)] if values else [None]
    if not failed:
        return
    shown = scalar_text(value, 120)
    explanation = one_line(text_of(score.get("explanation")), 300)
    message = f"{epoch_note}scored {shown}" + (f": {explanation}" if explanation else "")
    check.failures.append(scrub(message, secrets))
    answer = text_of(score.get("answer"))
    if answer:
        check.evidence.append(scrub(f"answer: {truncate(answer, 1000)}", secrets))


def _correct(value: Any) -> bool:
    """Inspect's value_to_float(value) == 1.0, for its default CORRECT/INCORRECT/PARTIAL/NOANSWER."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == 1
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _CORRECT:
            return True
        try:
            return float(text) == 1.0 and text not in ("nan", "inf")
        except ValueError:
            return False
    return False


def _finish(check: _Check) -> CheckResult:
    assertions = min(check.assertions, ASSERTIONS_LIMIT)
    if not check.failures:
        return CheckResult(name=check.name, assertions=assertions, passed=True)
    message = "; ".join(dict.fromkeys(check.failures))
    evidence = "\n".join(e for e in check.evidence if e)
    return CheckResult(
        name=check.name,
        assertions=assertions,
        passed=False,
        message=one_line(message),
        evidence=truncate(evidence) if evidence else None,
    )


def _read_metrics(header: dict[str, Any], task: str, metrics: dict[str, Any], secrets: tuple[str, ...]) -> None:
    scores = obj(header.get("results")).get("scores")
    for score in scores if isinstance(scores, list) else []:
        score = obj(score)
        scorer = text_of(score.get("name")) or text_of(score.get("scorer"))
        for metric_name, metric in obj(score.get("metrics")).items():
            value = metric_value(obj(metric).get("value"))
            if value is None or len(metrics) >= METRIC_LIMIT:
                continue
            metrics[shorten(scrub(one_line(f"{task}/{scorer}/{metric_name}"), secrets), NAME_LIMIT)] = value


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
