"""A key in a subtest's failure is redacted before the subtest's summary is cut (TAP)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.reports_in.tap import parse_tap

KEY = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@pytest.mark.parametrize("pad", range(470, 511))
def test_a_key_in_a_subtests_failure_is_redacted_wherever_the_summary_is_cut(tmp_path: Path, pad: int) -> None:
    # The parent's summary of its failed subtest is cut at 500 characters; the key may sit across that cut.
    # Scrubbed only after the cut (as it was), 4 to 7 of its first characters were left at pads 490-493.
    tap = (
        "TAP version 14\n1..1\n# Subtest: outer\n    1..1\n    not ok 1 - inner\n      ---\n"
        f"      message: '{'x' * pad}{KEY}'\n      ...\nnot ok 1 - outer\n"
    )
    path = tmp_path / "out.tap"
    path.write_text(tap)
    (check,) = parse_tap(path, secrets=[KEY]).checks
    shown = f"{check.name}\n{check.message}\n{check.evidence}"
    assert not any(KEY[:n] in shown for n in range(4, len(KEY) + 1)), shown
    assert not check.passed
