"""Record then replay with the real openai and anthropic SDKs, through the real CLI.

A suite of SDK evals (tests/scorers/sdk_calls.py) is recorded with
``evalrun t3 --record`` against a flaky, slow, compressing fake upstream on
127.0.0.1 (tests/harness/fakes_upstream.py, ``scripted``), each t3 eval recording for
its t2 twin with ``fixtures_for``; then ``evalrun t2`` replays it with the
upstream stopped and no key. Every call must get in replay exactly what it got
when recorded: answer, request id, error, number of HTTP attempts.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from harness.fakes_upstream import FakeUpstream
from harness.sdk_scenarios import ANTHROPIC_KEY, KEYS, OPENAI_KEY, SCENARIOS, SCORER, manifest, sdk_eval


def observed(proj, scenario: str, tier: str) -> list[dict]:
    return json.loads((proj.root / "evals" / "sdk" / "observed" / f"{scenario}.{tier}.json").read_text())


# One worker runs the tests of the recorded suite (a module fixture), so it is made once, not once per
# worker; the module's other tests are free to run on any worker.
SHARED = pytest.mark.xdist_group("replay-sdks")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The suite, recorded against one fake upstream per provider (each 404s the other's API, as real providers
    do), which are stopped then; and the requests each received."""
    from harness import Project

    proj = Project(tmp_path_factory.mktemp("sdks"))
    with FakeUpstream(scripted=True, provider="openai") as gpt_up, FakeUpstream(scripted=True, provider="anthropic") as claude_up:
        upstreams = {"openai": gpt_up.url, "anthropic": f"{claude_up.url}/v1"}
        proj.write({"manifest.toml": manifest(upstreams), "evals/sdk/score.py": SCORER})
        recording = proj.run("t3", "--record", "-j", "4", env=KEYS, timeout=300)
        received = {"openai": list(gpt_up.requests), "anthropic": list(claude_up.requests), "urls": upstreams}
    return proj, recording, received


@pytest.fixture(scope="module")
def suite(recorded):
    """The recorded suite, then replayed with the upstream stopped (a fixture of its own: each setup is one run)."""
    proj, recording, received = recorded
    replayed = proj.run("t2", "-j", "4", env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}, timeout=300)
    return proj, recording, replayed, received


@SHARED
def test_the_suite_records_with_each_providers_key(recorded):
    _, recording, received = recorded
    assert recording.code == 0, recording.output
    lowered = [{k.lower(): v for k, v in r.headers.items()} for r in received["openai"] + received["anthropic"]]
    assert all(h.get("authorization") == f"Bearer {OPENAI_KEY}" or h.get("x-api-key") == ANTHROPIC_KEY for h in lowered)


@SHARED
def test_each_providers_calls_go_to_its_own_upstream_and_the_header_says_where_it_was_set(recorded):
    proj, recording, received = recorded
    assert received["anthropic"] and {r.path for r in received["anthropic"]} == {"/v1/messages"}
    assert received["openai"] and "/v1/messages" not in {r.path for r in received["openai"]}
    openai_up, anthropic_up = received["urls"]["openai"], received["urls"]["anthropic"]
    assert (f"upstream: openai: {openai_up} ([models] upstream.openai); "
            f"anthropic: {anthropic_up} ([models] upstream.anthropic)") in recording.output
    # No upstream's refusal was kept as an answer: every fixture holds a status the suite recorded on purpose.
    statuses = {json.loads(f.read_text())["response"]["status"] for f in (proj.root / "evals/sdk/fixtures").rglob("*.json")}
    assert statuses <= {200, 429, 500}, statuses


@SHARED
def test_the_suite_replays_green_with_the_upstream_stopped(suite):
    proj, recorded, replayed, received = suite
    assert recorded.code == 0, recorded.output
    assert replayed.code == 0, replayed.output
    results = {e["name"]: e for e in proj.results("t2")["evals"]}
    assert {n: results[n]["status"] for n in SCENARIOS} == {n: "passed" for n in SCENARIOS}


@SHARED
def test_each_call_got_in_replay_what_it_got_when_recorded(suite):
    proj, *_ = suite
    for scenario in ("basics", "headers", "gzip"):
        assert observed(proj, scenario, "t2") == observed(proj, scenario, "t3"), scenario
    basics = {o["label"]: o for o in observed(proj, "basics", "t2")}
    assert all(o["ok"] for o in basics.values()), basics
    assert basics["tool calls"]["value"][:2] == ["get_weather", {"city": "Paris"}]
    assert basics["chat stream"]["value"][1] == 18 and basics["anthropic stream"]["value"][1] == 9
    # The anthropic SDK (2.x) names the path it requested in an error's text: the proxy's per-run route of the
    # eval (/t/<run token>/e/<eval>/...), another in t3 and t2. The scorer compares what follows the route;
    # what replay answers (status, body, request id) is compared whole, and no recording holds a route.
    claude_500 = {o["label"]: o for o in observed(proj, "headers", "t3")}["anthropic 500 not to be retried"]
    assert "/t/" not in claude_500["message"] and claude_500["body"], claude_500
    for fixture in (proj.root / "evals/sdk/fixtures").rglob("*.json"):
        assert not re.search(r"/t/[0-9a-f]{32}", fixture.read_text()), fixture


@SHARED
def test_recorded_retry_headers_replay_the_same_decisions(suite):
    proj, *_ = suite
    seen = {o["label"]: o for o in observed(proj, "headers", "t2")}
    # A recorded 500 with x-should-retry: false is not retried in replay, so the next call keeps its own answer.
    assert (seen["500 not to be retried"]["status"], seen["500 not to be retried"]["attempts"]) == (500, 1)
    assert seen["500 not to be retried"]["request_id"].startswith("req_")
    assert seen["the next call"]["value"][0].endswith(": second")
    # A recorded 429 is retried as recorded, with x-stainless-retry-count 0 then 1, each attempt its own fixture.
    assert seen["429 retried after retry-after-ms"]["retry_counts"] == ["0", "1"]
    assert seen["429 retried after retry-after-ms"]["value"][0].endswith(": [429] third")
    assert (seen["anthropic 500 not to be retried"]["status"], seen["anthropic 500 not to be retried"]["attempts"]) == (500, 1)
    fixture = json.loads((proj.root / "evals/sdk/fixtures/headers/0001.json").read_text())
    assert fixture["response"]["headers"]["x-should-retry"] == "false"
    limited = json.loads((proj.root / "evals/sdk/fixtures/headers/0003.json").read_text())["response"]
    assert (limited["status"], limited["headers"]["retry-after-ms"]) == (429, "20")  # no default backoff in replay


@SHARED
def test_an_attempt_the_client_abandoned_is_not_recorded_and_its_retry_takes_the_index(suite):
    proj, *_ = suite
    t3 = {o["label"]: o for o in observed(proj, "timeout", "t3")}
    t2 = {o["label"]: o for o in observed(proj, "timeout", "t2")}
    assert t3["slow first attempt"]["attempts"] >= 2  # the client timed out and retried while recording
    assert [t2[k]["value"] for k in t2] == [t3[k]["value"] for k in t2]
    assert t2["slow first attempt"]["attempts"] == 1
    files = sorted((proj.root / "evals/sdk/fixtures/timeout").glob("*.json"))
    assert [f.name for f in files] == ["0001.json", "0002.json"]  # the abandoned attempt left no fixture


@SHARED
def test_concurrent_calls_replayed_in_reverse_order_each_get_their_own_answer(suite):
    proj, *_ = suite
    t3, t2 = observed(proj, "concurrent", "t3"), observed(proj, "concurrent", "t2")
    assert [o["label"] for o in t2] == [f"concurrent {n}" for n in range(4)]
    assert t2 == t3
    assert all(o["value"][0].endswith(o["label"]) for o in t2)


@SHARED
def test_a_compressed_upstream_is_recorded_decoded_and_its_tokens_counted(suite):
    proj, *_ = suite
    live = proj.eval_result("gzip-live", "t3")["models"]["tokens"]["total"]
    replay = proj.eval_result("gzip", "t2")["models"]["tokens"]["total"]
    assert live == replay == 18 + 18 + 26
    fixtures = proj.root / "evals/sdk/fixtures/gzip"
    assert "content-encoding" not in (fixtures / "0001.json").read_text()
    stream = json.loads((fixtures / "0002.json").read_text())["response"]["stream"]
    assert stream[-1] == "data: [DONE]\n\n"


@SHARED
def test_evals_sharing_a_folder_only_see_their_own_sessions(suite, tmp_path):
    proj, recorded, replayed, _ = suite
    sessions = sorted(p.name for p in (proj.root / "evals/sdk/fixtures").iterdir())
    assert sessions == sorted([*SCENARIOS, "loner-live"])
    # strict_replay: loner-live's fixtures are no t2 eval's unplayed fixtures.
    assert "not requested" not in replayed.output
    # Recording one eval again, in the folder the others share (a copy of the recorded suite).
    again = tmp_path / "again"
    shutil.copytree(proj.root, again, ignore=shutil.ignore_patterns(".evalrun"))
    from harness import Project

    with FakeUpstream(scripted=True) as upstream:
        (again / "manifest.toml").write_text(manifest(upstream.url))
        rerecorded = Project(again).run("t3", "--record", "-e", "loner-live", "--json", "rerecord.json", env=KEYS,
                                        timeout=120)
    assert rerecorded.code == 0, rerecorded.output
    assert "delete it" not in rerecorded.output  # nothing advises deleting the other evals' fixtures
    for key in (OPENAI_KEY, ANTHROPIC_KEY):
        assert key not in rerecorded.output
        assert all(key[:16] not in f.read_text() for f in (again / "evals/sdk/fixtures/loner-live").glob("*.json"))


@SHARED
def test_the_summary_says_which_model_came_from_which_provider(suite):
    _, recorded, replayed, _ = suite
    assert "basics: anthropic claude-3-5-haiku-20241022, openai gpt-4.1-2025-04-14, openai gpt-4o-mini-2024-07-18" in replayed.output


@SHARED
def test_no_key_reaches_a_fixture_a_results_file_or_the_output(suite):
    proj, recorded, replayed, _ = suite
    files = [*(proj.root / "evals/sdk/fixtures").rglob("*.json"), *(proj.root / ".evalrun").rglob("*.json")]
    for key in (OPENAI_KEY, ANTHROPIC_KEY):
        assert key not in recorded.output + replayed.output
        assert all(key[:16] not in f.read_text() for f in files)


@SHARED
def test_a_prompt_edit_fails_replay_loudly_naming_the_fixture_and_the_field(suite, tmp_path):
    proj, *_ = suite
    edited = tmp_path / "edited"
    shutil.copytree(proj.root, edited, ignore=shutil.ignore_patterns(".evalrun"))
    (edited / "evals/sdk/basics-prompt.txt").write_text("hello, edited\n")
    from harness import Project

    run = Project(edited).run("t2", "-e", "basics", timeout=120)
    assert run.code == 1, run.output
    message = Project(edited).eval_result("basics", "t2")["message"]
    assert "call 1 of session 'basics' (POST /v1/chat/completions) does not match its recording" in message
    assert "its recording evals/sdk/fixtures/basics/0001.json: " in message
    assert 'messages[0].content: recorded "hello", now "hello, edited"' in message
    assert "re-record with `evalrun t3 --record -e basics-live`" in message  # that eval's recording only, not every t3 eval


def test_a_malformed_fixture_fails_the_eval_once_without_sdk_retries(project):
    proj = project({
        "manifest.toml": manifest("http://127.0.0.1:9", (), sdk_eval("bad-fixture")),
        "evals/sdk/score.py": SCORER,
        "evals/sdk/fixtures/bad-fixture/0001.json": json.dumps({
            "evalrun_fixture": 2, "request": {"method": "POST", "path": "/v1/chat/completions",
                                              "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}},
            "response": {"status": 200, "body_base64": "!!! not base64 !!!"}}),
    })
    run = proj.run("t2", timeout=120)
    assert run.code == 1, run.output
    result = proj.eval_result("bad-fixture", "t2")
    assert result["status"] == "failed"
    assert "0001.json: response.body_base64 is not base64; re-record it" in result["message"]
    seen = observed(proj, "bad-fixture", "t2")
    assert (seen[0]["ok"], seen[0]["status"], seen[0]["attempts"]) == (False, 400, 1)


def test_an_unreachable_upstream_is_not_retried_by_the_sdk(project):
    proj = project({
        "manifest.toml": manifest("http://127.0.0.1:9", (), loner="unreachable"),
        "evals/sdk/score.py": SCORER,
    })
    run = proj.run("t3", env=KEYS, timeout=120)
    assert run.code == 1, run.output
    seen = observed(proj, "unreachable", "t3")
    assert (seen[0]["status"], seen[0]["attempts"]) == (424, 1)
    assert "connection refused" in proj.eval_result("unreachable-live", "t3")["message"]


@SHARED
def test_a_suite_that_matches_by_index_serves_the_edited_prompt_its_old_answer(suite, tmp_path):
    proj, *_ = suite
    edited = tmp_path / "by-index"
    shutil.copytree(proj.root, edited, ignore=shutil.ignore_patterns(".evalrun"))
    (edited / "evals/sdk/basics-prompt.txt").write_text("hello, edited\n")
    manifest_file = edited / "manifest.toml"
    manifest_file.write_text(manifest_file.read_text().replace("strict_replay = true\n", 'strict_replay = true\nreplay_match = "index"\n'))
    from harness import Project

    run = Project(edited).run("t2", "-e", "basics", timeout=120)
    seen = {o["label"]: o for o in json.loads((edited / "evals/sdk/observed/basics.t2.json").read_text())}
    assert seen["chat"]["ok"] and seen["chat"]["value"][0].endswith(": hello")  # the recorded answer, by order
    assert "does not match its recording" not in run.output
    assert run.code == 0, run.output  # replayed green by order; the copy has no baseline to loosen
