"""``evalrun init --model``: day one of a project that calls a model through the official openai SDK.

From an empty folder: t1 green, ``t3 --record`` against the fake upstream init
wrote (a real HTTP server on 127.0.0.1, started as the README says), then
``t2`` green with that upstream stopped. The scorer is the real openai SDK.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the dev extra installs the openai SDK the generated scorer uses")

KEY = "sk-fake-init-model-123456"


@contextmanager
def fake_upstream(root: Path) -> Iterator[tuple[str, Path]]:
    """``python evals/fake_upstream.py --port 0``, as a user starts it; yields its /v1 URL and its log."""
    log = root / "fake.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-u", "evals/fake_upstream.py", "--port", "0"], cwd=root,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        from harness import wait_until

        line = wait_until(lambda: next((s for s in log.read_text().splitlines() if "http://" in s), None),
                          within=30, what="the fake upstream's address")
        yield line.split()[2], log
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_init_model_records_with_t3_then_replays_green_in_t2_with_the_upstream_stopped(project) -> None:
    proj = project()
    init = proj.run("init", "--model")
    assert init.code == 0, init.output
    for line in ("wrote evals/answer/score.py", "wrote evals/fake_upstream.py", 'pythonpath = ["."]', "evalrun t3 --record"):
        assert line in init.out, init.out
    manifest = (proj.root / "manifest.toml").read_text()
    assert 'fixtures_for = "answer"' in manifest and 'require = ["env:OPENAI_API_KEY"]' in manifest
    assert "[models]" in manifest and "from openai import OpenAI" in (proj.root / "evals/answer/score.py").read_text()

    t1 = proj.run("t1")
    assert t1.code == 0, t1.output
    assert proj.run("t3").code == 2, "t3 requires the key: refused without it"

    with fake_upstream(proj.root) as (url, log):
        assert url.endswith("/v1")  # the SDKs' base URL form, written into the manifest as is
        (proj.root / "manifest.toml").write_text(manifest.replace('# upstream = "http://127.0.0.1:8765/v1"', f'upstream = "{url}"'))
        record = proj.run("t3", "--record", env={"OPENAI_API_KEY": KEY})
        assert record.code == 0, record.output + log.read_text()
        assert "POST /v1/chat/completions -> 200" in log.read_text()  # not /v1/v1/chat/completions
        # EVALRUN_UPSTREAM, without the /v1, reaches the same route.
        again = proj.run("t3", "--record", env={"OPENAI_API_KEY": KEY, "EVALRUN_UPSTREAM": url.removesuffix("/v1")})
        assert again.code == 0, again.output
        assert "/v1/v1" not in log.read_text() and "404" not in log.read_text()
    fixtures = sorted(p.relative_to(proj.root).as_posix() for p in (proj.root / "evals/answer/fixtures").rglob("*.json"))
    assert fixtures == ["evals/answer/fixtures/answer/0001.json"]
    assert KEY not in (proj.root / fixtures[0]).read_text()

    t2 = proj.run("t2")  # the upstream is stopped and no key is set
    assert t2.code == 0, t2.output
    assert proj.eval_result("answer", "t2")["status"] == "passed"
    assert KEY not in t2.output


def test_an_upstream_that_is_no_base_url_is_one_line_exit_2(project) -> None:
    proj = project()
    assert proj.run("init", "--model").code == 0
    path = proj.root / "manifest.toml"
    path.write_text(path.read_text().replace('# upstream = "http://127.0.0.1:8765/v1"', 'upstream = "127.0.0.1:8765/v1"'))
    r = proj.run("t1")
    assert r.code == 2 and r.err.strip().startswith("evalrun: error: manifest.toml: models.upstream: must be a base URL"), r.err
    path.write_text(path.read_text().replace('upstream = "127.0.0.1:8765/v1"', "# no upstream"))
    bad_env = proj.run("t3", "--record", env={"OPENAI_API_KEY": KEY, "EVALRUN_UPSTREAM": "localhost"})
    assert bad_env.code == 2 and "EVALRUN_UPSTREAM='localhost': must be a base URL" in bad_env.err, bad_env.output


def test_plain_init_writes_no_model_eval(project) -> None:
    proj = project()
    assert proj.run("init").code == 0
    assert not (proj.root / "evals/answer").exists() and not (proj.root / "evals/fake_upstream.py").exists()
    assert "[models]" not in (proj.root / "manifest.toml").read_text()
    assert proj.run("t1").code == 0
