"""One short message for what went wrong with an eval's model calls.

The proxy notes one message per call it could not answer, each with its fix;
a run where four calls had no fixture would repeat the same ~250 characters
four times, and once more inside the check whose call failed. This module
groups them: the missing fixtures in one clause ("3 calls had no fixture:
weather-paris/0001–0002, judge/0001 (in evals/agent/fixtures); record them
with ..."), every other finding once, and the proxy's own text inside a
scorer's message shortened to the file it is about.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from evalrun.errors import file_label

_MISMATCH = re.compile(r"does not match its recording (\S+?\.json):")  # the player's mismatch text
RECORD_COMMAND = "evalrun t3 --record"


def _record(what: str, command: str) -> str:
    return f"record {what} with `{command}`, or make the code call the model as it did when recorded"


def grouped_failures(failures: Sequence[str], missing_fixtures: Sequence[tuple[Path, str]],
                     record_command: str = RECORD_COMMAND) -> list[str]:
    """``failures`` with the missing-fixture ones folded into one clause, each other message once, in order."""
    about_missing = {message for _, message in missing_fixtures}
    lines: list[str] = []
    if missing_fixtures:
        lines.append(describe_missing([path for path, _ in missing_fixtures], record_command))
    for message in failures:
        if message not in about_missing and message not in lines:
            lines.append(message)
    return lines


def describe_missing(paths: Sequence[Path], record_command: str = RECORD_COMMAND) -> str:
    """``2 calls had no fixture: s/0001–0002 (in evals/x/fixtures); record them with ...``."""
    unique = list(dict.fromkeys(paths))
    if len(unique) == 1:
        return f"1 call had no fixture: {file_label(unique[0])}; {_record('it', record_command)}"
    folders = list(dict.fromkeys(p.parent.parent for p in unique))
    parts = []
    for folder in folders:
        named = ", ".join(_sessions(p for p in unique if p.parent.parent == folder))
        parts.append(f"{named} (in {file_label(folder)})")
    return f"{len(unique)} calls had no fixture: {'; '.join(parts)}; {_record('them', record_command)}"


def shortened(message: str, failures: Sequence[str], missing_fixtures: Sequence[tuple[Path, str]]) -> str:
    """A scorer's message with the proxy's messages it quotes cut to what they are about (said in full above)."""
    short = {text: f"evalrun replay: missing fixture {_short_name(path)}" for path, text in missing_fixtures}
    for text in failures:
        if text not in short and len(text) > 80:
            # Said in full once, in the eval's line: the quote names the file it does not match, or the call
            # only, or the finding without its fix.
            mismatch = _MISMATCH.search(text)
            call = _CALL.match(text)
            if mismatch:
                short[text] = f"evalrun replay: does not match {_short_name(Path(mismatch[1]))}"
            elif call is not None:
                short[text] = f"{call.group(0)} refused (said above)"
            elif "; " in text:
                short[text] = text.split("; ", 1)[0]
    for text, replacement in short.items():
        # As the scorer quotes it: verbatim, or inside a JSON body (the JS SDKs' error messages carry the
        # response's JSON, where its quotes are escaped), whole or cut short after the finding.
        for quoted in dict.fromkeys((text, json.dumps(text)[1:-1])):
            message = _replace_quoted(message, quoted, replacement)
    return message


def _replace_quoted(message: str, quoted: str, replacement: str) -> str:
    if quoted in message:
        return message.replace(quoted, replacement)
    head = quoted.split("; ", 1)[0]
    start = message.find(head) if len(head) >= 40 else -1
    if start < 0:
        return message
    end = start + len(head)
    while end < len(message) and end - start < len(quoted) and message[end] == quoted[end - start]:
        end += 1  # the rest of the quote, as far as the scorer kept it
    return message[:start] + replacement + message[end:]


_CALL = re.compile(r"evalrun replay: call \d+ of session '[^']*' \([A-Z]+ [^)\s]*\)")


def _short_name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _sessions(paths: object) -> list[str]:
    """``session/0001–0003`` per session, consecutive indexes as a range, in the order first seen."""
    by_session: dict[str, list[int]] = {}
    names: dict[tuple[str, int], str] = {}
    for path in paths:  # type: ignore[attr-defined]
        session = path.parent.name
        try:
            index = int(path.stem)
        except ValueError:
            index = -1
        by_session.setdefault(session, []).append(index)
        names[(session, index)] = path.stem
    out: list[str] = []
    for session, indexes in by_session.items():
        indexes = sorted(set(indexes))
        start = prev = indexes[0]
        for i in [*indexes[1:], None]:
            if i is not None and prev >= 0 and i == prev + 1:
                prev = i
                continue
            first, last = names[(session, start)], names[(session, prev)]
            out.append(f"{session}/{first}" if start == prev else f"{session}/{first}–{last}")
            if i is not None:
                start = prev = i
    return out
