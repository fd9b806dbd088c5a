"""Keys kept out: what a scorer's environment holds in each tier, and proof that t2 cannot call live."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from evalrun.models.scorer_env import (
    BASE_URL_VARS,
    T1_MODEL_URL,
    endpoint_env,
    scrub_environment,
)
from evalrun.secrets import KEY_VARS, PLACEHOLDER, known_secrets
from evalrun.secrets import key_values as secret_values
from evalrun.models.replay.proxy import ReplayProxy

from harness.fakes_upstream import FakeUpstream

REAL_KEY = "sk-proj-THIS-IS-A-REAL-LOOKING-KEY-0123456789"
PROXY = "http://127.0.0.1:4321/e/agent"

# What a scorer does with a model SDK: read the key and base URL from its environment and call.
CLIENT = r"""
import json, os, sys
import httpx
key = os.environ["OPENAI_API_KEY"]
out = {"key_is_placeholder": key == sys.argv[1], "anthropic_is_placeholder": os.environ["ANTHROPIC_API_KEY"] == sys.argv[1]}
try:
    r = httpx.post(os.environ["OPENAI_BASE_URL"] + "/chat/completions", timeout=5,
                   headers={"Authorization": "Bearer " + key},
                   json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    out.update(status=r.status_code, error=r.json()["error"]["type"], message=r.json()["error"]["message"])
except httpx.ConnectError:
    out.update(status=None, error="connect refused")
print(json.dumps(out))
"""


def real_env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": REAL_KEY, "ANTHROPIC_API_KEY": REAL_KEY + "-ant"}


def run_client(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", CLIENT, PLACEHOLDER], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert REAL_KEY not in done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("tier", ["t1", "t2"])
def test_t1_and_t2_replace_every_key_with_the_placeholder_even_when_absent(tier):
    scrubbed = scrub_environment({"OPENAI_API_KEY": REAL_KEY, "HOME": "/home/me"}, tier, PROXY)
    # Of Anthropic's two credential variables only one is set: the SDK warns when both are.
    assert all(scrubbed[name] == PLACEHOLDER for name in KEY_VARS if name != "ANTHROPIC_AUTH_TOKEN")
    assert "ANTHROPIC_AUTH_TOKEN" not in scrubbed
    assert scrubbed["HOME"] == "/home/me"
    assert REAL_KEY not in scrubbed.values()


ANTHROPIC_CLIENT = r"""
import logging, sys
import anthropic
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
client = anthropic.Anthropic()
print("api_key" if client.api_key == sys.argv[1] else "auth_token" if client.auth_token == sys.argv[1] else "none")
"""


@pytest.mark.parametrize(
    ("own", "used"),
    [
        ({}, "api_key"),
        ({"ANTHROPIC_API_KEY": REAL_KEY}, "api_key"),
        ({"ANTHROPIC_API_KEY": REAL_KEY, "ANTHROPIC_AUTH_TOKEN": REAL_KEY + "-tok"}, "api_key"),
        ({"ANTHROPIC_AUTH_TOKEN": REAL_KEY}, "auth_token"),  # the kind of credential the user's code expects
    ],
)
def test_the_real_anthropic_sdk_gets_one_placeholder_credential_and_does_not_warn(own, used):
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    scrubbed = scrub_environment({**base, **own}, "t2", PROXY)
    done = subprocess.run([sys.executable, "-c", ANTHROPIC_CLIENT, PLACEHOLDER], env=scrubbed,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == used
    assert "both set" not in done.stderr and "ANTHROPIC_AUTH_TOKEN" not in done.stderr, done.stderr
    assert REAL_KEY not in done.stdout + done.stderr


def test_t1_points_every_base_url_at_nothing_reachable_even_when_given_a_proxy():
    scrubbed = scrub_environment({"OPENAI_BASE_URL": "https://api.openai.com/v1"}, "t1", PROXY)
    assert {name: scrubbed[name] for name in BASE_URL_VARS} == endpoint_env(T1_MODEL_URL)
    assert scrubbed["OPENAI_BASE_URL"] == "http://127.0.0.1:4/evalrun-t1-has-no-model/v1"


def test_t2_points_the_base_urls_at_the_proxy_with_the_documented_mapping():
    scrubbed = scrub_environment({}, "t2", PROXY)
    assert scrubbed["OPENAI_BASE_URL"] == f"{PROXY}/v1"
    assert scrubbed["OPENAI_API_BASE"] == f"{PROXY}/v1"
    assert scrubbed["ANTHROPIC_BASE_URL"] == PROXY
    assert scrubbed["EVALRUN_MODEL_URL"] == PROXY


def test_t2_without_a_proxy_reaches_no_model_either():
    assert scrub_environment({}, "t2", None)["EVALRUN_MODEL_URL"] == T1_MODEL_URL


def test_t3_keeps_keys_and_routes_through_the_proxy_only_when_one_runs():
    env = {"OPENAI_API_KEY": REAL_KEY, "OPENAI_BASE_URL": "https://example.test/v1"}
    assert scrub_environment(env, "t3", None) == env
    through = scrub_environment(env, "t3", PROXY)
    assert through["OPENAI_API_KEY"] == REAL_KEY and through["OPENAI_BASE_URL"] == f"{PROXY}/v1"


def test_the_manifest_can_name_more_key_variables():
    scrubbed = scrub_environment({"ACME_LLM_TOKEN": "acme-secret"}, "t2", PROXY, extra_key_vars=["ACME_LLM_TOKEN"])
    assert scrubbed["ACME_LLM_TOKEN"] == PLACEHOLDER
    assert secret_values({"ACME_LLM_TOKEN": "acme-secret"}, ["ACME_LLM_TOKEN"]) == {"acme-secret"}


def test_no_proxy_keeps_loopback_calls_off_a_machine_wide_http_proxy():
    scrubbed = scrub_environment({"NO_PROXY": "corp.example", "HTTPS_PROXY": "http://proxy:3128"}, "t2", PROXY)
    assert scrubbed["NO_PROXY"] == "corp.example,127.0.0.1,localhost"
    assert scrubbed["no_proxy"] == "127.0.0.1,localhost"


def test_secret_values_are_the_set_keys_but_not_the_placeholder_or_trivial_values():
    env = {"OPENAI_API_KEY": REAL_KEY, "GROQ_API_KEY": PLACEHOLDER, "HF_TOKEN": "x", "MISTRAL_API_KEY": ""}
    assert secret_values(env) == {REAL_KEY}


def test_the_original_environment_is_not_changed():
    env = {"OPENAI_API_KEY": REAL_KEY}
    scrub_environment(env, "t1", None)
    assert env == {"OPENAI_API_KEY": REAL_KEY}


def test_an_unknown_tier_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown tier 't4'"):
        scrub_environment({}, "t4", None)


def test_a_t2_eval_cannot_make_a_live_call_on_a_machine_that_holds_real_keys(tmp_path):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    with FakeUpstream() as provider:
        # Even a proxy told about an upstream and handed the real keys never relays in replay mode.
        with ReplayProxy("replay", upstream=provider.url, key_env=real_env(), redact_values=set(known_secrets(real_env()).keys)) as proxy:
            base = proxy.register_eval("agent", fixtures)
            seen = run_client(scrub_environment(real_env(), "t2", base))
            report = proxy.eval_report("agent")
        assert provider.requests == []
    assert seen["key_is_placeholder"] and seen["anthropic_is_placeholder"]
    assert seen["status"] == 404 and seen["error"] == "evalrun_missing_fixture"
    assert str(fixtures / "agent" / "0001.json") in str(seen["message"])
    assert len(report.missing) == 1


def test_a_t1_eval_reaches_no_model_at_all():
    seen = run_client(scrub_environment(real_env(), "t1", None))
    assert seen["key_is_placeholder"]
    assert seen["error"] == "connect refused"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_nodes_fetch_tries_the_placeholder_and_is_refused_not_turned_away_as_a_bad_port():
    # Port 9 (the discard port) is on the Fetch standard's bad-port list: Node's fetch failed with "bad port"
    # before connecting, and the scorer's message explained nothing.
    script = (
        "fetch(process.argv[1] + '/v1/chat/completions', {method: 'POST'})"
        ".then(() => console.log('answered'), (e) => console.log(e.cause ? (e.cause.code || e.cause.message) : e.message))"
    )
    done = subprocess.run(["node", "-e", script, T1_MODEL_URL], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ECONNREFUSED", done.stdout + done.stderr
