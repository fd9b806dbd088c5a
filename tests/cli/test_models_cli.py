"""Model calls through the real CLI: keys kept out, record then replay, missing fixtures, budgets."""

from __future__ import annotations

import json

from harness import an_eval, manifest
from harness.fakes_upstream import FakeUpstream
from harness.model_projects import CALLER, SECRET, model_project


def _evidence(proj, name: str, tier: str) -> dict:
    return json.loads(proj.eval_result(name, tier)["checks"][0]["evidence"])


def test_t1_scorers_get_placeholders_and_an_unreachable_model(project) -> None:
    proj = project(manifest(an_eval("caller", dir="e", files={"score.py": CALLER})).project())
    r = proj.run("t1", env={"OPENAI_API_KEY": SECRET, "TOLERATE": "1"})
    assert r.code == 0, r.output
    seen = _evidence(proj, "caller", "t1")
    assert seen["key"] == "evalrun-placeholder-not-a-key"
    assert seen["base"].startswith("http://127.0.0.1:4/")
    assert seen["answers"][0].startswith("error")
    assert SECRET not in r.output + (proj.root / ".evalrun/results/t1.json").read_text()


def test_record_in_t3_then_replay_in_t2_without_a_key(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(project, tier="t3", extra='env = { CALLS = "2" }', tier_table=f'[models]\nupstream = "{upstream.url}"\n\n')
        r = proj.run("t3", "--record", env={"OPENAI_API_KEY": SECRET})
        assert r.code == 0, r.output
        assert len(upstream.requests) == 2
        headers = {k.lower(): v for k, v in upstream.requests[0].headers.items()}
        assert headers.get("authorization") == f"Bearer {SECRET}"  # t3 keeps the key
    fixtures = sorted((proj.root / "evals" / "caller" / "fixtures" / "caller").glob("*.json"))
    assert [f.name for f in fixtures] == ["0001.json", "0002.json"]
    assert all(SECRET not in f.read_text() for f in fixtures)
    assert "authorization" not in fixtures[0].read_text().lower()
    recorded = _evidence(proj, "caller", "t3")["answers"]
    assert "models that answered:" in r.out and "gpt-4o-mini" in r.out

    # the same eval in t2 replays the fixtures: no key, no upstream, same answers
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('tier = "t3"', 'tier = "t2"'))
    r = proj.run("t2", env={"OPENAI_API_KEY": SECRET})
    assert r.code == 0, r.output
    seen = _evidence(proj, "caller", "t2")
    assert seen["answers"] == recorded
    assert seen["key"] == "evalrun-placeholder-not-a-key"
    models = proj.eval_result("caller", "t2")["models"]
    assert models["mode"] == "replay" and models["calls"] == 2 and models["models"]
    assert SECRET not in r.output + (proj.root / ".evalrun/results/t2.json").read_text()


def test_t2_missing_fixture_fails_even_when_the_code_swallowed_the_error(project) -> None:
    proj = model_project(project, extra='env = { TOLERATE = "1" }')
    r = proj.run("t2", env={"OPENAI_API_KEY": SECRET})
    assert r.code == 1, r.output
    res = proj.eval_result("caller", "t2")
    assert res["status"] == "failed"
    assert "fixtures/caller/0001.json" in res["message"]


def test_t2_never_makes_a_live_call_even_with_a_real_key(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(
            project, extra='env = { TOLERATE = "1" }', tier_table=f'[models]\nupstream = "{upstream.url}"\n\n'
        )
        r = proj.run("t2", env={"OPENAI_API_KEY": SECRET})
        assert upstream.requests == []
    assert r.code == 1, r.output  # the scorer ran and asked: no fixture, no live call
    assert _evidence(proj, "caller", "t2")["answers"][0].startswith("error")


def test_budget_exhausted_is_not_checked_not_failed(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(
            project,
            tier="t3",
            evals=("a-first", "b-second", "c-third"),
            extra='env = { CALLS = "2" }',
            tier_table=f'[tiers.t3]\nbudget = {{ calls = 3 }}\n\n[models]\nupstream = "{upstream.url}"\n\n',
        )
        r = proj.run("t3", "-j", "1", env={"OPENAI_API_KEY": SECRET})
        assert len(upstream.requests) == 3
    assert r.code == 4, r.output
    statuses = {e["name"]: e["status"] for e in proj.results("t3")["evals"]}
    assert statuses == {"a-first": "passed", "b-second": "budget", "c-third": "budget"}
    assert proj.eval_result("c-third", "t3")["message"].startswith("not checked: budget exhausted")
    assert "0 failed" in r.out


def test_record_outside_t3_is_a_usage_error(project) -> None:
    proj = model_project(project)
    r = proj.run("t2", "--record")
    assert r.code == 2 and "--record: only t3" in r.err


def test_unplayed_fixtures_are_reported_and_fail_under_strict_replay(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(project, tier="t3", extra='env = { CALLS = "2" }', tier_table=f'[models]\nupstream = "{upstream.url}"\n\n')
        assert proj.run("t3", "--record", env={"OPENAI_API_KEY": SECRET}).code == 0
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('tier = "t3"', 'tier = "t2"').replace('CALLS = "2"', 'CALLS = "1"'))
    r = proj.run("t2")
    assert r.code == 0, r.output
    note = proj.eval_result("caller", "t2")["message"]
    assert note.startswith("note: ") and "0002.json" in note and "not requested" in note
    manifest.write_text(manifest.read_text().replace(f'upstream = "{upstream.url}"', f'upstream = "{upstream.url}"\nstrict_replay = true'))
    r = proj.run("t2")
    assert r.code == 1, r.output
    assert "0002.json" in proj.eval_result("caller", "t2")["message"]


def test_fixtures_for_must_name_an_eval_of_the_manifest(project) -> None:
    proj = model_project(project, tier="t3", extra='fixtures_for = "nobody"')
    r = proj.run("t3")
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        'evalrun: error: manifest.toml: evals[0] ("caller").fixtures_for: no eval is named \'nobody\'; '
        "name the eval whose fixtures this one records"
    ]
    # fixtures_for on an eval whose calls do not go through evalrun would record nothing: refused, by check too
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('model = true\nfixtures_for = "nobody"', 'fixtures_for = "caller"'))
    r = proj.run("check")
    assert r.code == 2, r.output
    assert r.err.strip().splitlines() == [
        'evalrun: error: manifest.toml: evals[0] ("caller").fixtures_for: its model calls do not go through evalrun, '
        "so it records no fixtures; add model = true (or [tiers.t3] model = true), or remove fixtures_for"
    ]


def test_an_evals_own_base_url_is_its_upstream_never_a_way_around_the_proxy(project) -> None:
    # A product's gateway config copied into the manifest: the eval's env sets OPENAI_BASE_URL.
    with FakeUpstream() as gateway:
        proj = model_project(
            project, tier="t3", extra=f'env = {{ CALLS = "3", TOLERATE = "1", OPENAI_BASE_URL = "{gateway.url}/v1" }}',
            tier_table="[tiers.t3]\nbudget = { calls = 2 }\n\n",
        )
        r = proj.run("t3", "--record", env={"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:4/v1"})
        assert len(gateway.requests) == 2  # through the proxy: the budget held the third call
    assert r.code == 4, r.output
    assert proj.eval_result("caller", "t3")["status"] == "budget"
    assert f'upstream of caller: openai: {gateway.url}/v1 (evals[0] ("caller").env.OPENAI_BASE_URL)' in r.output
    # The rest of the run goes where the user's own OPENAI_BASE_URL says, and the header says so.
    assert "upstream: openai: http://127.0.0.1:4/v1 (OPENAI_BASE_URL in evalrun's environment); " in r.output
    assert _evidence(proj, "caller", "t3")["base"].startswith("http://127.0.0.1:")  # the proxy's
    assert len(list((proj.root / "evals" / "caller" / "fixtures" / "caller").glob("*.json"))) == 2

    # t2 with the same env line replays the recordings; the address in the eval's env is never called.
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('tier = "t3"', 'tier = "t2"').replace('CALLS = "3"', 'CALLS = "2"')
                        .replace("[tiers.t3]\nbudget = { calls = 2 }\n", ""))
    r = proj.run("t2", env={"OPENAI_API_KEY": SECRET})
    assert r.code == 0, r.output
    assert all(a.startswith("echo: question") for a in _evidence(proj, "caller", "t2")["answers"])
    assert proj.eval_result("caller", "t2")["models"]["calls"] == 2


STREAMER = """
import json
import httpx, openai
from evalrun import scorer

client = openai.OpenAI(max_retries=0, http_client=httpx.Client(trust_env=False))
got = []
for prompt in ("one", "two", "three"):
    try:  # the SDK's documented stream=True: it does not ask for usage
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], stream=True)
        got.append("".join(chunk.choices[0].delta.content or "" for chunk in stream))
    except openai.APIStatusError as exc:
        got.append(f"error {exc.status_code}")
with scorer.check("the model answered") as c:
    c.evidence(json.dumps(got))
    c.true(all(not g.startswith("error") for g in got), got)
"""


def test_streams_the_sdk_did_not_ask_usage_for_are_counted_never_free(project) -> None:
    # Three ~200-token streamed calls under a 300-token cap: the third is refused. Another eval's upstream
    # ignores the request for usage: its calls are uncounted and the eval says so.
    with FakeUpstream(stream_usage="asked", stream_tokens=(150, 50)) as api, \
            FakeUpstream(stream_usage="never", stream_tokens=(150, 50)) as mute:
        proj = project(manifest(
            an_eval("capped", tier="t3", dir="evals/s", model=True, budget={"tokens": 300}),
            an_eval("mute", tier="t3", dir="evals/s", model=True, env={"OPENAI_BASE_URL": f"{mute.url}/v1"}),
        ).project({"evals/s/score.py": STREAMER}))
        r = proj.run("t3", env={"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": f"{api.url}/v1"})
        assert len(api.requests) == 2 and len(mute.requests) == 3
    assert r.code == 4, r.output
    capped = proj.eval_result("capped", "t3")
    assert capped["status"] == "budget" and capped["models"]["tokens"]["total"] == 400
    mute_result = proj.eval_result("mute", "t3")
    assert mute_result["status"] == "passed" and mute_result["models"]["uncounted_calls"] == 3
    assert "note: 3 streamed calls reported no usage although asked" in mute_result["message"]
    assert "  mute: openai gpt-4o-mini-2024-07-18, 3 calls, 0 tokens + 3 uncounted calls (live)\n" in r.out
    assert SECRET not in r.output
