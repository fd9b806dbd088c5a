"""Exit codes and the one error hierarchy that the CLI turns into one line."""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    """The README's exit-code table. When several apply: 2, 1, 3, 4, 5."""

    OK = 0
    FAILED = 1
    USAGE = 2
    REGRESSED = 3
    UNCHECKED = 4
    NOTHING_SELECTED = 5
    INTERRUPTED = 130


class EvalrunError(Exception):
    """An error the user can fix; printed as one line, mapped to an exit code."""

    exit_code: ExitCode = ExitCode.USAGE


class UsageError(EvalrunError):
    """Bad arguments on the command line."""


class ManifestError(EvalrunError):
    """manifest.toml is invalid."""


class BaselineError(EvalrunError):
    """A baseline file is invalid."""


class ResultsError(EvalrunError):
    """A results file is missing or invalid."""


class OutputError(EvalrunError):
    """An output file (--json, --junit, --markdown, a baseline) cannot be written there."""


class TierGuardError(EvalrunError):
    """A tier's ``require`` guard is unmet: refuse to run the tier at all."""


class BaselineRefused(EvalrunError):
    """``baseline --update`` refused to record a failing state."""

    exit_code = ExitCode.FAILED


class ReportError(Exception):
    """A scorer's report is unusable. Not fatal to the run: the eval fails."""


def file_label(path: Path) -> str:
    """How messages name a file: relative to the working directory when under it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)
