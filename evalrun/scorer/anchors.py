"""The judge's anchor set, asked as an eval: ``python -m evalrun.scorer.anchors ANCHORS.jsonl``.

An anchor is an example people labelled: what the judge is shown (``subject``,
``rubric``, optional ``ground_truth``) and the verdict a person gave
(``label``: true for pass). This scorer asks the judge each anchor through
evalrun's proxy, exactly as ``Check.judge`` does (so t3 records the calls and
t2 replays them, in the eval's ``judge`` session), and reports:

- one check per anchor, ``anchor <id>``: it passes when the judge gave a
  verdict at all (one assertion), agreeing or not: whether the judge agrees
  with people is decided over the whole set, by evalrun, against the eval's
  ``anchors`` floors; the evidence says what people and the judge said;
- the metrics ``anchors.both_pass``, ``anchors.only_people`` (people passed,
  the judge failed), ``anchors.only_judge`` and ``anchors.both_fail``: the
  agreement table evalrun computes kappa, AC1 and the error rates from.

Stdlib only, like the SDK. A malformed anchors file is the scorer's crash with
one line naming the file, the line and the fix.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evalrun import scorer
from evalrun.scorer import judging

MAX_BYTES = 16 * 1024 * 1024  # an anchors file read at most
TABLE = ("both_pass", "only_people", "only_judge", "both_fail")


class AnchorError(Exception):
    """The anchors file is malformed: one line naming the place."""


def load_anchors(path: Path) -> list[dict]:
    """The anchors of a JSON Lines file, each ``{"id", "subject", "rubric", "label"[, "ground_truth"]}``."""
    with open(path, "rb") as f:
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise AnchorError(f"{path}: larger than {MAX_BYTES // (1024 * 1024)} MiB; split the anchor set")
    anchors: list[dict] = []
    seen: set[str] = set()
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except ValueError:
            raise AnchorError(f"{where}: not JSON; each line is one anchor object") from None
        if not isinstance(item, dict):
            raise AnchorError(f"{where}: an anchor is a JSON object")
        anchor_id = item.get("id")
        if not isinstance(anchor_id, (str, int)) or isinstance(anchor_id, bool) or str(anchor_id) == "":
            raise AnchorError(f'{where}: "id" must be a non-empty string (anchors are named by id, never by position)')
        anchor_id = str(anchor_id)
        if anchor_id in seen:
            raise AnchorError(f'{where}: id "{anchor_id}" is used twice; ids must be unique')
        seen.add(anchor_id)
        if not isinstance(item.get("label"), bool):
            raise AnchorError(f'{where}: "label" must be true (people passed it) or false')
        for key in ("subject", "rubric"):
            if key not in item:
                raise AnchorError(f'{where}: "{key}" is missing')
        anchors.append({**item, "id": anchor_id})
    if not anchors:
        raise AnchorError(f"{path}: holds no anchors; write one JSON object per line")
    return anchors


def run(path: Path) -> int:
    anchors = load_anchors(path)
    table = dict.fromkeys(TABLE, 0)
    identities: list[str] = []
    for anchor in anchors:
        people = anchor["label"]
        with scorer.check(f"anchor {anchor['id']}") as c:
            outcome = judging.ask(anchor["subject"], anchor["rubric"], anchor.get("ground_truth"), anchor.get("model"))
            if outcome.identity:
                identities.append(outcome.identity)
                c._judges.append(outcome.identity)
            if outcome.problem is not None:
                if outcome.raw:
                    c.evidence(f"judge reply: {outcome.raw}")
                c.fail(outcome.problem)
            judge = outcome.passed
            c.evidence(f"people: {'pass' if people else 'fail'}; judge: {'pass' if judge else 'fail'}: {outcome.reason}")
            c.true(True)  # the judge gave a verdict; agreement is decided over the set
            key = ("both_pass" if judge else "only_people") if people else ("only_judge" if judge else "both_fail")
            table[key] += 1
    for key in TABLE:
        scorer.metric(f"anchors.{key}", table[key])
    if identities:
        scorer.metric("anchors.judge", judging.combined_identity(identities))
    return scorer.finish()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m evalrun.scorer.anchors ANCHORS.jsonl", file=sys.stderr)
        return 2
    try:
        return run(Path(argv[0]))
    except AnchorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {argv[0]}: cannot read ({exc.strerror or exc})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
