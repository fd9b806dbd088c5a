"""Property tests of the readers issue 22 added: a traceback's place, a model call's record (whatever the bytes)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.models.transcript import MAX_MESSAGES, MAX_TOOL_CALLS, TEXT_CHARS, call_record
from evalrun.reports_in.rules import crash_place

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
        st.sampled_from(["messages", "content", "role", "choices", "message", "tool_calls", "function", "name",
                         "arguments", "text", "type", "input", "system", "error", "delta", "model", "x"]), inner,
        max_size=6),
    max_leaves=40,
)


@given(output=st.text(max_size=400))
@settings(max_examples=100, deadline=None)
def test_crash_place_never_raises_and_names_only_a_file_in_the_folder(tmp_path_factory, output: str) -> None:
    folder = Path("/nonexistent-eval-folder-22")
    place = crash_place(output, folder, "evals/x")
    assert place is None or place.startswith("evals/x/")


@given(lines=st.lists(st.sampled_from([
    'Traceback (most recent call last):', '  File "score.py", line 3, in <module>', '  File "/usr/lib/x.py", line 9',
    "    at f (/elsewhere/a.js:1:2)", "    at score.js:4:7", "KeyError: 'k'", "noise",
]), max_size=12))
@settings(max_examples=100, deadline=None)
def test_crash_place_of_any_mix_of_frames_is_in_the_folder_or_none(tmp_path_factory, lines: list[str]) -> None:
    folder = tmp_path_factory.getbasetemp() / "eval-folder"
    folder.mkdir(exist_ok=True)
    place = crash_place("\n".join(lines), folder, "")
    assert place is None or place.split(":")[0] in ("score.py", "score.js")


@given(request=JSONISH, response=JSONISH, raw=st.binary(max_size=200), stream=st.lists(st.text(max_size=80), max_size=5))
@settings(max_examples=100, deadline=None)
def test_a_call_record_is_made_from_any_bodies_and_stays_bounded(request, response, raw: bytes, stream) -> None:
    for req, resp in ((json.dumps(request).encode(), json.dumps(response).encode()), (raw, raw)):
        record = call_record(number=1, session="s", index=1, provider="openai", method="POST", path="/v1/x?key=1",
                             request=req, response=resp, stream=stream, status=200)
        assert record["route"] == "POST /v1/x"  # never a query string
        assert len(record.get("messages") or []) <= MAX_MESSAGES
        assert len(record.get("tool_calls") or []) <= MAX_TOOL_CALLS
        for text in [record.get("answer") or "", *(m.get("text") or "" for m in record.get("messages") or [])]:
            assert len(text) <= TEXT_CHARS + 40
        json.dumps(record)  # what goes into a results file
