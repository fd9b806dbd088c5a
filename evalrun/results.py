"""The results of one invocation: per-eval records, versioned, written atomically.

This module owns the data that flows out of ``execute`` and into the baseline
comparison, the verdict and every reporter. It is plain data (stdlib dataclasses:
a run builds them and writes them, and builds no validator), so a results file
written by one run can be read back, validated, by ``baseline --from-results``,
``baseline diff`` and ``merge``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import lru_cache
from operator import itemgetter
from pathlib import Path
from typing import Annotated, Any, Literal

# What the floor of every evalrun run imports anyway (the manifest's models): no validator is built here.
from pydantic import ConfigDict, Field, ValidationError
from pydantic_core import PydanticSerializationError, to_json
from typing_extensions import NotRequired, TypedDict  # pydantic reads typing_extensions' TypedDict on 3.11

from evalrun.atomic import write_atomic, writes_in_place
from evalrun.errors import ResultsError
from evalrun.files import FileReadError, read_bounded
from evalrun.secrets import FRAGMENT, scrub

# 2: repeats and pass rates (``rate`` on checks, ``repeats`` on evals); 3: ``run_id`` on runs, ``kind`` on bites
# files, so that an evalrun that knows only 2 refuses a newer file by its version, not by a field it has not heard of;
# 4: ``network`` on runs (whether and how the run phase was isolated from the network).
RESULTS_VERSION = 4
# Every version up to this one reads: 1 lacks only the optional repeat fields; 2 may hold run_id and kind.
_READABLE_VERSIONS = tuple(range(1, RESULTS_VERSION + 1))
RUN_ID_PATTERN = r"^[0-9A-Za-z][0-9A-Za-z._-]{0,99}$"  # what ``new_run_id`` makes, with room: no space, no markup
RESULTS_LIMIT = 1024**3  # bytes read of a results file: 1,000,000 checks take a tenth of it


class Status(str, Enum):
    """What became of one eval. Only ``passed`` is a pass; a skip never is."""

    PASSED = "passed"
    FAILED = "failed"  # a check failed, or a runner rule failed the eval
    ERROR = "error"  # the scorer crashed, was not found, or wrote an unusable report
    TIMEOUT = "timeout"
    SKIPPED = "skipped"  # a precondition was unmet: not checked
    INTERRUPTED = "interrupted"  # Ctrl-C arrived before it finished
    BUDGET = "budget"  # not checked: the model budget was exhausted

    @property
    def is_failure(self) -> bool:
        return self in (Status.FAILED, Status.ERROR, Status.TIMEOUT)

    @property
    def is_unchecked(self) -> bool:
        return self in (Status.SKIPPED, Status.INTERRUPTED, Status.BUDGET)


# Plain dataclasses, not pydantic models: a run only builds these records and writes them (``results_json_pieces``,
# schema-free through pydantic_core), so a run never pays for building validators. Reading a results file validates
# it with a ``TypeAdapter`` built on the first read (``_adapter``): ``__pydantic_config__`` and the
# ``Annotated`` constraints below are what it checks. Every record but CheckResult is keyword-only, as the pydantic
# models were; a field typed ``float`` holds a float (``__post_init__``: an int given is made one, as pydantic did, so
# that ``1`` is written ``1.0`` as it always was).
_FORBID = ConfigDict(extra="forbid")


def _float(value: Any) -> Any:
    return float(value) if type(value) is int else value


def _floats(values: Any) -> Any:
    return None if values is None else tuple(_float(v) for v in values)


class _Record:
    """Equality and repr of the records below, as a dataclass makes them, written once: a dataclass compiles its own
    per class when the module is imported (about 0.15 ms a class on Python 3.11, in every run)."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable: as unhashable as the models were
    __dataclass_fields__: dict[str, Any]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = self.__dataclass_fields__
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__dataclass_fields__)})"


class _FrozenRecord(_Record):
    """A read-only record's equality and repr (``_Record``), and the hash a frozen dataclass makes: its fields'."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.__dataclass_fields__))


# A slotted dataclass: a run of 500 evals x 2,000 checks holds a million of these.
@dataclass(slots=True, frozen=True, repr=False, eq=False)
class CheckResult(_FrozenRecord):
    """One check of a scorer's report, after the runner's rules were applied."""

    __pydantic_config__ = _FORBID

    name: str
    assertions: int
    passed: bool
    message: str | None = None
    evidence: str | None = None
    rate: CheckRate | None = None  # only for an eval that repeats: runs, passes and their statistics
    judge: str | None = None  # "model#rubric-hash" when a model judged it (evalrun.scorer.judging.identity)


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class CheckRate(_Record):
    """A check's pass rate over an eval's repeats (``evalrun.repeats``; statistics from ``evalrun.stats``)."""

    __pydantic_config__ = _FORBID

    runs: int  # the eval's runs that produced a report; a run where the check is absent counts as not passed
    passes: int
    seen: int  # runs whose report held this check; < runs: it vanished in some runs
    skipped: int = 0  # of the runs without it, those whose report skipped its test by name (counted as not passed)
    pass_at_k: dict[str, float] = field(default_factory=dict)  # k -> unbiased pass@k
    pass_hat_k: dict[str, float] = field(default_factory=dict)  # k -> unbiased pass^k
    wilson_95: tuple[float, float] = (0.0, 1.0)  # 95% Wilson score interval of passes/runs
    flaky: bool = False  # at or above the floor, but not passed in every run
    failed_runs: list[int] = field(default_factory=list)  # EVALRUN_REPEAT of the runs it did not pass

    def __post_init__(self) -> None:
        self.pass_at_k = {k: _float(v) for k, v in self.pass_at_k.items()}
        self.pass_hat_k = {k: _float(v) for k, v in self.pass_hat_k.items()}
        self.wilson_95 = _floats(self.wilson_95)


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class RepeatRun(_Record):
    """One repeat of an eval: its index (``EVALRUN_REPEAT``) and what became of it."""

    __pydantic_config__ = _FORBID

    repeat: int
    status: Status
    duration_s: float = 0.0
    exit_code: int | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if type(self.status) is not Status:  # "passed" given: the member, as pydantic made it
            self.status = Status(self.status)
        self.duration_s = _float(self.duration_s)


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class RepeatSummary(_Record):
    """How an eval's repeats went: how many were planned and made, the floor, and what was flaky."""

    __pydantic_config__ = _FORBID

    planned: int
    runs: int  # runs made that produced a report (the denominator of every rate)
    floor: float
    alpha: float
    too_little_data: str = "note"  # "fail": a rate comparison that cannot tell is exit 4
    stop: str | None = None  # "decided": early stop was on
    stopped_early: bool = False  # rates come from fewer runs than planned: the verdict was decided
    partial: bool = False  # interrupted or stopped by the budget: rates of the finished runs only
    flaky: list[str] = field(default_factory=list)
    below_floor: list[str] = field(default_factory=list)
    runs_detail: list[RepeatRun] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.floor, self.alpha = _float(self.floor), _float(self.alpha)


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class SkippedTest(_Record):
    """A test the scorer's report lists but did not run (TAP ``# SKIP``, JUnit ``<skipped>``, a todo): not a check."""

    __pydantic_config__ = _FORBID

    name: str
    reason: str = ""


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class EvalResult(_Record):
    """The record of one planned eval."""

    __pydantic_config__ = _FORBID

    name: str  # ``eval[experiment]`` for a run under an experiment (evalrun.plan)
    tier: str
    dir: str
    status: Status
    experiment: str | None = None  # the column it ran under, if any
    message: str | None = None  # the explaining message: why it failed, skipped, ...
    checks: list[CheckResult] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    exit_code: int | None = None
    output_tail: str = ""
    models: dict[str, Any] | None = None  # provider, models that answered, calls, tokens
    partial: bool = False  # timed out or interrupted: ``checks`` are those it finished before it was stopped
    repeats: RepeatSummary | None = None  # only for an eval that repeats (repeat > 1)
    skipped_tests: list[SkippedTest] = field(default_factory=list)  # its report's skips (TAP, JUnit), in its order

    def __post_init__(self) -> None:
        if type(self.status) is not Status:  # "passed" given: the member, as pydantic made it
            self.status = Status(self.status)
        self.duration_s = _float(self.duration_s)

    def check_counts(self) -> dict[str, int]:
        return {c.name: c.assertions for c in self.checks}


_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')  # what JSON text writes other than as it is (pydantic_core: not "/")


def redact_result(result: EvalResult, secrets: set[str]) -> EvalResult:
    """``result`` with every secret scrubbed from every string a scorer or a process could put there.

    Check names and metric values included: a check named after a key must not
    reach a results file, JUnit, or a committed baseline.
    """
    if not secrets:
        return result
    # The cheap test looks for the secrets in the result's JSON, where only ASCII without a quote, a backslash or a
    # control character is written as it is: a secret holding anything else is always scrubbed the long way.
    if all(s.isascii() and not _JSON_ESCAPED.search(s) for s in secrets):
        dumped = _dump(result).decode()  # cheap test first: most results hold no secret at all
        if not any(s[i : i + FRAGMENT] in dumped for s in secrets for i in range(max(1, len(s) - FRAGMENT + 1))):
            return result

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return value if isinstance(value, Enum) else scrub(value, secrets)  # a Status is no text of a scorer's
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):  # a list field given a tuple holds it as given
            return type(value)(clean(v) for v in value)
        if isinstance(value, _Record):  # a record inside: the same record, its text scrubbed
            return type(value)(**{name: clean(getattr(value, name)) for name in value.__dataclass_fields__})
        return value

    cleaned = clean(result)
    # What the manifest named it stays as named: the run finds its eval by these, and committed
    # manifest text is no secret (a key that shares 8 characters with an eval's name must not
    # turn "judge-anchors-live" into a name no eval has).
    cleaned.name, cleaned.tier, cleaned.dir = result.name, result.tier, result.dir
    cleaned.experiment = result.experiment
    return cleaned


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class BaselineChange(_Record):
    """One line of a baseline comparison."""

    __pydantic_config__ = _FORBID

    eval: str
    check: str | None = None  # None: the change concerns the whole eval
    kind: str  # vanished-check, weakened, vanished-eval, new-check, new-eval, stronger; decayed, decayed-paired, improved, new-rate, too-little-data (pass rates)
    baseline: int | None = None
    current: int | None = None
    message: str
    # kinds decayed and improved (pass rates of a repeated eval): passes/runs before and now, and the p-value
    baseline_rate: tuple[int, int] | None = None
    current_rate: tuple[int, int] | None = None
    p_value: float | None = None
    # kind too-little-data: the highest pass rate this run would have called a regression (None: no drop could be)
    detectable: float | None = None
    fails: bool = False  # too-little-data under too_little_data = "fail": the run exits 4

    def __post_init__(self) -> None:
        if self.baseline_rate is not None:
            self.baseline_rate = tuple(self.baseline_rate)
        if self.current_rate is not None:
            self.current_rate = tuple(self.current_rate)
        self.p_value, self.detectable = _float(self.p_value), _float(self.detectable)


# Who judged a check: the model asked and a hash of its prompt and rubric (evalrun.scorer.judging.identity).
JUDGE_ID = r"[A-Za-z0-9._:/@+-]{1,100}#[0-9a-f]{12}"


NETWORK_MECHANISMS = ("namespace", "seccomp+landlock", "seccomp")


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class NetworkIsolation(_Record):
    """Whether the run phase of a t1/t2 run was kept off the network, and how (``evalrun.run.isolation``).

    ``mechanism``: ``namespace`` (a loopback-only network namespace), ``seccomp+landlock`` or ``seccomp``
    (the fallback for the scorers, ``evalrun.sandbox``); None when not isolated, and then ``reason`` says why.
    """

    __pydantic_config__ = _FORBID

    isolated: bool
    mechanism: Literal["namespace", "seccomp+landlock", "seccomp"] | None = None
    reason: Annotated[str | None, Field(max_length=2000)] = None


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class JudgeCalibration(_Record):
    """How a judge agreed with people on its anchor set, and the run's judged checks corrected for it (evalrun.calibration)."""

    __pydantic_config__ = _FORBID

    eval: str  # the anchors eval
    judge: str | None = None  # "model#rubric-hash" of the anchors' judge
    anchors: int  # anchors with a verdict
    both_pass: int
    only_people: int  # people passed it, the judge failed it
    only_judge: int  # the judge passed it, people failed it
    both_fail: int
    true_positive_rate: float | None = None  # of what people passed, the share the judge passed (sensitivity)
    true_negative_rate: float | None = None  # of what people failed, the share the judge failed (specificity)
    kappa: float | None = None  # Cohen's kappa; None: undefined (every verdict one way)
    ac1: float | None = None  # Gwet's AC1
    disagree: bool = False  # kappa and AC1 differ by more than 0.3: the anchors are unbalanced
    min_kappa: float | None = None
    min_ac1: float | None = None
    below: list[str] = field(default_factory=list)  # the floors the judge missed, e.g. "kappa 0.41 < min_kappa 0.6"
    judged_checks: int = 0  # the run's checks judged by this judge's model (anchors aside)
    judged_passes: int = 0
    corrected: tuple[float, float, float] | None = None  # their pass rate corrected for the judge's errors: estimate, 95% low, high

    def __post_init__(self) -> None:
        self.true_positive_rate = _float(self.true_positive_rate)
        self.true_negative_rate = _float(self.true_negative_rate)
        self.kappa, self.ac1 = _float(self.kappa), _float(self.ac1)
        self.min_kappa, self.min_ac1 = _float(self.min_kappa), _float(self.min_ac1)
        self.corrected = _floats(self.corrected)


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class BaselineComparison(_Record):
    """What the baseline comparison found, recorded in the results file."""

    __pydantic_config__ = _FORBID

    path: str
    exists: bool
    regressions: list[BaselineChange] = field(default_factory=list)
    stale: list[BaselineChange] = field(default_factory=list)
    # repeated checks whose rate moved too little to tell, given the runs (evalrun.baseline_rates)
    undecided: list[BaselineChange] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)
    strict: bool = False
    update_command: str = ""


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class RunResults(_Record):
    """A results file: one invocation of one tier (or one merge of shards)."""

    __pydantic_config__ = _FORBID

    version: int = RESULTS_VERSION
    # "bites": written by ``evalrun bites`` (one record per bite, never compared with a baseline); "run" (not
    # written: the default, so an older evalrun's file, written again, is the same bytes): any other
    kind: Literal["run", "bites"] = "run"
    evalrun_version: str
    tier: str
    manifest: str
    started_at: str
    # The run's id in the history, made when the run is (``new_run_id``): two runs are two ids, whatever their
    # results; none in a file of an older evalrun (the history derives one from the content, ``history.records``).
    run_id: Annotated[str | None, Field(pattern=RUN_ID_PATTERN)] = None
    finished_at: str | None = None
    interrupted: bool = False
    selection: dict[str, Any] = field(default_factory=dict)  # filters: evals, tags, shard, ...
    evals: list[EvalResult] = field(default_factory=list)
    baseline: BaselineComparison | None = None
    exit_code: int | None = None
    cost: dict[str, Any] | None = None  # the run's model cost: usd, unpriced_calls, unpriced_models (evalrun.models.cost)
    judges: list[JudgeCalibration] = field(default_factory=list)  # judges measured on their anchors (evalrun.calibration)
    # t1 and t2: whether the run phase was isolated from the network, and how; None for t3, a merge of shards that
    # disagree, and the files of an evalrun before results version 4.
    network: NetworkIsolation | None = None


def run_stamp(started_at: str) -> str:
    """``20261201T025030``: the start of a run to the second, as its id begins."""
    return "".join(ch for ch in started_at[:19] if ch.isdigit() or ch == "T")


# A bite's verdict (``evalrun bites``), kept in its result's ``metrics["outcome"]``: evalrun.bites decides it,
# reports_out and merge read it from the record.
CAUGHT, NOT_CAUGHT, BROKEN, SKIPPED, INTERRUPTED = "caught", "not caught", "broken", "skipped", "interrupted"


def outcome_of(result: EvalResult) -> str:
    """A bite's verdict from its result; a result without one is broken (it proves nothing)."""
    return str(result.metrics.get("outcome", BROKEN))


def new_run_id(tier: str, started_at: str) -> str:
    """``20261201T025030-t1-3f9a2c1b``: sortable, readable, and this run's alone (32 random bits a second and tier)."""
    return f"{run_stamp(started_at)}-{tier}-{os.urandom(4).hex()}"


def merged_run_id(tier: str, started_at: str, shard_ids: list[str | None]) -> str | None:
    """The id of the merge of shards: derived from theirs, so merging the same shards again is the same run.

    None when a shard has no id (an older evalrun's file): the history then derives one from the content.
    """
    if not shard_ids or any(i is None for i in shard_ids):
        return None
    digest = hashlib.sha256("\n".join(sorted(i for i in shard_ids if i)).encode("utf-8")).hexdigest()[:8]
    return f"{run_stamp(started_at)}-{tier}-{digest}"


def write_results(results: RunResults, path: Path) -> None:
    """Write the results file atomically, one writer at a time: a killed run never leaves it torn."""
    from evalrun.locks import hold_lock, sidecar_lock

    if writes_in_place(path):  # /dev/stdout, a FIFO: nothing to replace, and no lock file beside it
        write_atomic(path, results_json_pieces(results))
        return
    real = Path(os.path.realpath(path))  # one lock for the file, whichever link names it
    with hold_lock(sidecar_lock(real)):
        write_atomic(real, results_json_pieces(results))


def results_json_pieces(results: RunResults) -> Iterator[str]:
    """The results file's JSON, one eval at a time: 500 evals of 2,000 checks never sit in memory as one text."""
    # No "run_id": null, no "kind": "run" and no "network": null: a file of an older evalrun, written again, is byte
    # for byte what it wrote (its history id is a hash of these bytes, evalrun.history.records.run_id_for).
    exclude = {"evals"} | (set() if results.run_id else {"run_id"}) | ({"kind"} if results.kind == "run" else set())
    exclude |= {"network"} if results.network is None else set()
    head = json.loads(_dump(results, exclude=exclude))
    yield "{\n"
    for key, value in head.items():
        yield f"  {json.dumps(key)}: {_indented(json.dumps(value, indent=2, ensure_ascii=False))},\n"
    yield '  "evals": ['
    for index, result in enumerate(results.evals):
        yield ("," if index else "") + "\n    " + _indented(_eval_json(result), 2)
    yield "\n  ]\n}\n" if results.evals else "]\n}\n"


def _eval_json(result: EvalResult) -> str:
    return _dump(result, indent=2).decode()


def _dump(record: Any, **options: Any) -> bytes:
    """``record``'s JSON, inferred from the dataclasses, enums and floats themselves: byte for byte what the
    pydantic models wrote (NaN and infinities as null, text as UTF-8; a lone surrogate in a key as they wrote
    it, or their same error)."""
    try:
        return to_json(record, inf_nan_mode="null", **options)
    except PydanticSerializationError:
        return to_json(_lossy_keys(record), inf_nan_mode="null", **options)


# The records' dict fields whose keys the pydantic models wrote lossily (a lone surrogate as U+FFFD, one a byte of
# its UTF-8 form) where inference refuses them: a model name or a metric's name with one must not lose the file.
_KEYED = {RunResults: ("selection", "cost"), EvalResult: ("metrics", "models"), CheckRate: ("pass_at_k", "pass_hat_k")}


def _lossy_keys(record: Any) -> Any:
    """``record`` with the keys of its dict fields (and of its evals', checks' and rates') as the models wrote them."""
    if type(record) is RunResults:
        return replace(_with_lossy_keys(record), evals=[_lossy_keys(r) for r in record.evals])
    if type(record) is EvalResult:
        checks = [c if c.rate is None else replace(c, rate=_with_lossy_keys(c.rate)) for c in record.checks]
        return replace(_with_lossy_keys(record), checks=checks)
    return record


def _with_lossy_keys(record: Any) -> Any:
    def lossy(key: Any) -> Any:
        return key.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if isinstance(key, str) else key

    changed = {name: {lossy(k): v for k, v in value.items()}
               for name in _KEYED[type(record)] if isinstance(value := getattr(record, name), dict)}
    return replace(record, **changed)


def _indented(text: str, levels: int = 1) -> str:
    return text.replace("\n", "\n" + "  " * levels)


def load_results(path: Path) -> RunResults:
    """Read a results file, with one-line errors naming the file, whatever its bytes."""
    from evalrun.text import one_line

    try:
        return _load_results(path)
    except ResultsError as exc:
        raise ResultsError(one_line(str(exc), 1000)) from None
    except RecursionError:
        raise ResultsError(f"{path}: nested too deeply to be a results file; rerun the tier to rewrite it") from None


def load_run_results(path: Path, use: str) -> RunResults:
    """``load_results`` of a run's file; a bites file (``evalrun bites``) is refused in one line ending in ``use``.

    A bites file is no run of the tier: its records are bites, its checks "failed as they must". Read as a
    run's results it would write a baseline of bites or put them in the history as a run."""
    results = load_results(path)
    if results.kind == "bites":
        raise ResultsError(f"{path}: holds bites (evalrun bites), not a run's results; {use}")
    return results


def _load_results(path: Path) -> RunResults:
    data = _read_results_data(path)
    try:
        return validate_results(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ResultsError(f"{path}: {where}: {_words(err)}; rerun the tier to rewrite it") from None


def _words(err: Any) -> str:
    """What is wrong, in the words evalrun has always used: those of pydantic's models for every record but a check.

    The records are dataclasses now, for which pydantic words two errors its own way.
    """
    loc = err["loc"]
    in_a_check = len(loc) == 5 and loc[0] == "evals" and loc[2] == "checks"  # evals.0.checks.1.key
    if err["type"] == "unexpected_keyword_argument" and not in_a_check:
        return "Extra inputs are not permitted"
    if err["type"] == "dataclass_type" and err["ctx"]["class_name"] != CheckResult.__name__:
        return f"Input should be a valid dictionary or instance of {err['ctx']['class_name']}"
    return str(err["msg"])


def validate_results(data: Any) -> RunResults:
    """A results file's JSON (a dict) as its record, validated; ``ValidationError`` names what is wrong."""
    return _adapter(RunResults).validate_python(data)


def validate_network(data: Any) -> NetworkIsolation:
    """A stored ``network`` (the history's column) as the record; ``ValidationError`` (a ValueError) if it is none."""
    return _adapter(NetworkIsolation).validate_python(data)


@lru_cache(maxsize=None)
def _adapter(record: type) -> Any:
    """The validator of ``record``, built when a file is first read: never by a run that only writes its records."""
    from pydantic import TypeAdapter

    return TypeAdapter(record)


def _read_results_data(path: Path) -> dict[str, Any]:
    try:
        raw = read_bounded(path, RESULTS_LIMIT, "a results file")
    except FileReadError as exc:
        if exc.missing:
            raise ResultsError(f"{path}: no such results file; run the tier first or pass --json PATH") from None
        raise ResultsError(f"{path}: {exc.reason}; pass the results file evalrun wrote") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not UTF-8 text (byte {exc.start}); rerun the tier to rewrite it") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    except ValueError as exc:  # int() refuses numbers of more than 4300 digits
        raise ResultsError(f"{path}: cannot be read ({exc}); rerun the tier to rewrite it") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: top level: must be a JSON object; rerun the tier to rewrite it")
    if data.get("version") not in _READABLE_VERSIONS:
        version = data.get("version")
        if type(version) is int and version > RESULTS_VERSION:
            raise ResultsError(
                f"{path}: results version {version} is newer than this evalrun reads ({RESULTS_VERSION});"
                " upgrade evalrun to read it, or rerun the tier with this one"
            )
        shown = repr(version) if isinstance(version, (int, str, type(None))) and len(repr(version)) < 40 else "(unreadable)"
        raise ResultsError(
            f"{path}: results version {shown} is not one this evalrun reads (1 to {RESULTS_VERSION});"
            " rerun the tier with this evalrun"
        )
    return data


CheckCounts = dict[str, dict[str, int]]  # eval -> check -> assertions: what a baseline comparison reads of checks


class _CountedCheck(TypedDict):
    """``CheckResult``'s fields, validated alike, into a dict: no object is built (a test keeps the two equal)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    name: str
    assertions: int
    passed: bool
    message: NotRequired[str | None]
    evidence: NotRequired[str | None]
    rate: NotRequired[CheckRate | None]
    judge: NotRequired[str | None]


def load_results_counted(path: Path) -> tuple[RunResults, CheckCounts]:
    """A results file read for a baseline comparison only (``baseline diff``), with its checks as counts.

    The file is validated exactly as ``load_results`` validates it, and a bad
    one raises the same one-line ``ResultsError``. But building a million
    ``CheckResult`` records takes seconds where their counts take a fraction:
    so each eval whose checks only matter as counts (it does not repeat, and
    ``failed_before_scorer`` cannot depend on them) comes back with ``checks``
    empty and its counts in the second value, under its name.
    """
    try:
        return _counted(_read_results_data(path))
    except (ResultsError, RecursionError, ValidationError, TypeError, KeyError, AttributeError):
        pass  # whatever is wrong, load_results names it, in the same one line
    results = load_results(path)
    return results, {}  # not reached for a file it refuses; a file it accepts is compared by its records


_COUNTED_CHECKS: Any = None
_NAME, _ASSERTIONS = itemgetter("name"), itemgetter("assertions")


def _counted(data: dict[str, Any]) -> tuple[RunResults, CheckCounts]:
    global _COUNTED_CHECKS
    if _COUNTED_CHECKS is None:
        from pydantic import TypeAdapter

        _COUNTED_CHECKS = TypeAdapter(list[_CountedCheck])
    evals = data["evals"] if "evals" in data else []
    counted: dict[int, dict[str, int]] = {}
    slim = []
    for index, raw in enumerate(evals):
        countable = (
            isinstance(raw, dict) and raw.get("repeats") is None and isinstance(raw.get("checks"), list)
            and not (raw.get("status") == Status.FAILED.value and raw.get("exit_code") is None)
        )
        if not countable:
            slim.append(raw)
            continue
        checks = _COUNTED_CHECKS.validate_python(raw["checks"])
        counted[index] = dict(zip(map(_NAME, checks), map(_ASSERTIONS, checks)))  # {name: assertions}, in C
        slim.append({**raw, "checks": []})
        raw["checks"] = None  # the raw check dicts go now, not when the whole file is read
    results = validate_results({**data, "evals": slim})
    if len({result.name for result in results.evals}) != len(results.evals):
        raise TypeError("an eval name twice: counts by name would be ambiguous; read the records")
    return results, {results.evals[index].name: counts for index, counts in counted.items()}


def results_schema() -> dict[str, Any]:
    return _adapter(RunResults).json_schema()
