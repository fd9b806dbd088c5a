"""Record then replay real openai/anthropic SDK sessions N times in a row; every round must pass both ways.

Each round is a fresh project with the real-SDK scorer of the replay tests
(tests/scorers/sdk_calls.py) against the scripted fake upstream on 127.0.0.1
(tests/harness/fakes_upstream.py): ``evalrun t3 --record`` of the scenarios
``retry-plain-stream`` (a client-timeout retry, a plain call, then a stream),
``timeout``, ``basics`` and ``concurrent``, then, with the upstream stopped and no key,
``evalrun t2``. A round passes when both runs exit 0 and every fixture the
recording counted is on disk when ``t3`` exits (the replay would fail "missing
fixture" otherwise). Run it while the machine is loaded, e.g. with CPU burners::

    for i in 1 2 3 4; do timeout 1200 python -c 'while 1: pass' & done
    python bench/loop_record_replay.py --rounds 20

``--tail-delay`` is how long a ``[slow-tail]`` stream waits after its ``[DONE]``
(0: none, the race left to the load alone).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fakes_upstream import FakeUpstream  # noqa: E402
from test_replay_sdks import KEYS, SCORER, manifest  # noqa: E402

SCENARIOS = ("retry-plain-stream", "timeout", "basics", "concurrent")


def run(folder: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_", "CI"))}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "evalrun", *args], cwd=folder, env=full,
                          capture_output=True, text=True, timeout=600)


def one_round(tail_delay: float) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="evalrun-loop-") as scratch:
        folder = Path(scratch)
        (folder / "evals/sdk").mkdir(parents=True)
        (folder / "evals/sdk/score.py").write_text(SCORER)
        with FakeUpstream(scripted=True, tail_delay=tail_delay) as upstream:
            (folder / "manifest.toml").write_text(manifest(upstream.url, scenarios=SCENARIOS))
            recorded = run(folder, "t3", "--record", "-j", "4", *[a for s in SCENARIOS for a in ("-e", f"{s}-live")], env=KEYS)
            on_disk = {s: len(list((folder / "evals/sdk/fixtures" / s).glob("*.json"))) for s in SCENARIOS}
        if recorded.returncode != 0:
            return False, f"record exit {recorded.returncode}: {recorded.stdout[-2000:]}{recorded.stderr[-2000:]}"
        replayed = run(folder, "t2", "-j", "4", env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""})
        if replayed.returncode != 0:
            return False, f"replay exit {replayed.returncode} (fixtures on disk {on_disk}): {replayed.stdout[-3000:]}"
        return True, f"fixtures {on_disk}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--tail-delay", type=float, default=0.0)
    args = parser.parse_args()
    passed = 0
    for number in range(1, args.rounds + 1):
        start = time.monotonic()
        ok, detail = one_round(args.tail_delay)
        passed += ok
        load = os.getloadavg()[0]
        print(f"round {number}: {'pass' if ok else 'FAIL'} ({time.monotonic() - start:.1f} s, load {load:.1f}) {detail}",
              flush=True)
    print(f"{passed}/{args.rounds} rounds passed record then replay")
    return 0 if passed == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
