"""Where each provider's calls go (evalrun.models.upstreams): the precedence, the refusals, the shown source."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrun.reports_out.run_notes import describe_upstreams as describe
from evalrun.models.upstreams import (
    Upstream,
    UpstreamProblem,
    eval_upstreams,
    run_upstreams,
    upstream_problem,
)

GW = "http://gw.example:8080/v1"


def shown(upstreams: dict[str, Upstream]) -> dict[str, tuple[str, str]]:
    return {p: (u.url, u.source) for p, u in upstreams.items()}


def test_without_any_setting_each_provider_goes_to_its_own_api():
    assert shown(run_upstreams(None, {})) == {
        "openai": ("https://api.openai.com", "the provider's API"),
        "anthropic": ("https://api.anthropic.com", "the provider's API"),
    }


@pytest.mark.parametrize(
    ("manifest", "environ", "openai", "anthropic"),
    [
        # The single string and EVALRUN_UPSTREAM still apply to every provider; the variable wins.
        ("http://m:1", {}, ("http://m:1", "[models] upstream"), ("http://m:1", "[models] upstream")),
        ("http://m:1", {"EVALRUN_UPSTREAM": "http://e:2"}, ("http://e:2", "EVALRUN_UPSTREAM"), ("http://e:2", "EVALRUN_UPSTREAM")),
        # A provider's own setting wins over one for every provider, wherever each was given.
        ({"anthropic": "http://a:3"}, {"EVALRUN_UPSTREAM": "http://e:2"},
         ("http://e:2", "EVALRUN_UPSTREAM"), ("http://a:3", "[models] upstream.anthropic")),
        ({"anthropic": "http://a:3"}, {"EVALRUN_UPSTREAM_ANTHROPIC": "http://ea:4"},
         ("https://api.openai.com", "the provider's API"), ("http://ea:4", "EVALRUN_UPSTREAM_ANTHROPIC")),
        ("http://m:1", {"EVALRUN_UPSTREAM_OPENAI": "http://eo:5/"},
         ("http://eo:5", "EVALRUN_UPSTREAM_OPENAI"), ("http://m:1", "[models] upstream")),
        # The SDKs' own variables in evalrun's environment, when nothing else names an upstream.
        (None, {"OPENAI_BASE_URL": GW, "ANTHROPIC_BASE_URL": "http://ant.gw"},
         (GW, "OPENAI_BASE_URL in evalrun's environment"), ("http://ant.gw", "ANTHROPIC_BASE_URL in evalrun's environment")),
        (None, {"OPENAI_API_BASE": GW, "ANTHROPIC_API_URL": "http://ant.gw"},
         (GW, "OPENAI_API_BASE in evalrun's environment"), ("http://ant.gw", "ANTHROPIC_API_URL in evalrun's environment")),
        # ... but the manifest's upstream wins over them.
        ("http://m:1", {"OPENAI_BASE_URL": GW}, ("http://m:1", "[models] upstream"), ("http://m:1", "[models] upstream")),
    ],
    ids=["manifest-string", "env-over-manifest", "provider-table-over-env", "provider-env-over-table",
         "provider-env-over-string", "sdk-vars", "sdk-other-vars", "manifest-over-sdk-vars"],
)
def test_the_precedence_per_provider(manifest, environ, openai, anthropic):
    assert shown(run_upstreams(manifest, environ)) == {"openai": openai, "anthropic": anthropic}


def test_an_evals_env_is_its_upstream_where_the_manifest_named_none():
    run = run_upstreams(None, {"OPENAI_BASE_URL": "http://user:1"})
    own = eval_upstreams(run, {"OPENAI_BASE_URL": GW, "OTHER": "x"}, 'evals[2] ("chat")')
    assert shown(own)["openai"] == (GW, 'evals[2] ("chat").env.OPENAI_BASE_URL')
    assert own["anthropic"] == run["anthropic"]
    # A manifest (or run) upstream wins over the eval's env: that is what "the manifest names no upstream" means.
    named = run_upstreams({"openai": "http://m:1"}, {})
    assert eval_upstreams(named, {"OPENAI_BASE_URL": GW}, "e")["openai"] == named["openai"]


@pytest.mark.parametrize(
    ("manifest", "environ", "message"),
    [
        (None, {"EVALRUN_UPSTREAM": "http://h:1/v1/chat/completions"},
         "EVALRUN_UPSTREAM='http://h:1/v1/chat/completions': is an endpoint, not a base URL (the SDK adds "
         '/chat/completions itself, so it would be doubled); use "http://h:1/v1"'),
        (None, {"ANTHROPIC_BASE_URL": "https://gw/v1/messages/"},
         "ANTHROPIC_BASE_URL='https://gw/v1/messages/' (in evalrun's environment): is an endpoint, not a base URL "
         '(the SDK adds /messages itself, so it would be doubled); use "https://gw/v1"'),
        (None, {"EVALRUN_UPSTREAM_OPENIA": "http://h:1"},
         "EVALRUN_UPSTREAM_OPENIA: no such provider; use EVALRUN_UPSTREAM_OPENAI or EVALRUN_UPSTREAM_ANTHROPIC "
         "(or EVALRUN_UPSTREAM for every provider)"),
        (None, {"OPENAI_BASE_URL": "gw:8080"},
         "OPENAI_BASE_URL='gw:8080' (in evalrun's environment): must be a base URL such as "
         '"https://api.openai.com" or "http://127.0.0.1:8765/v1"'),
    ],
)
def test_an_unusable_upstream_is_one_line_naming_where_it_was_set_and_the_fix(manifest, environ, message):
    with pytest.raises(UpstreamProblem) as caught:
        run_upstreams(manifest, environ)
    assert str(caught.value) == message


def test_the_header_line_says_each_providers_upstream_and_its_source_once_when_shared():
    assert describe(run_upstreams("http://m:1", {})) == "openai and anthropic: http://m:1 ([models] upstream)"
    assert describe(run_upstreams(None, {"EVALRUN_UPSTREAM_OPENAI": "http://o:1"})) == (
        "openai: http://o:1 (EVALRUN_UPSTREAM_OPENAI); anthropic: https://api.anthropic.com (the provider's API)"
    )


@given(
    host=st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z]{2,5})?", fullmatch=True),
    port=st.integers(1, 65535),
    prefix=st.sampled_from(["", "/v1", "/api", "/api/v1", "/openai/v1"]),
    endpoint=st.sampled_from(["/chat/completions", "/completions", "/messages", "/responses", "/embeddings"]),
    slash=st.booleans(),
)
def test_a_base_url_is_accepted_and_the_same_with_an_endpoint_is_refused_naming_the_base(host, port, prefix, endpoint, slash):
    base = f"http://{host}:{port}{prefix}"
    assert upstream_problem(base + ("/" if slash else "")) is None
    problem = upstream_problem(base + endpoint + ("/" if slash else ""))
    assert problem is not None and problem.endswith(f'use "{base}"')


@pytest.mark.parametrize("url", ["http://[x", "http://h:99999", "http://h:x/v1", "ftp://h", "http:///v1"])
def test_a_url_that_is_no_http_base_url_is_refused_not_crashed_on(url):
    assert upstream_problem(url) == 'must be a base URL such as "https://api.openai.com" or "http://127.0.0.1:8765/v1"'


@given(st.text(max_size=80))
def test_any_text_gets_an_answer_never_an_exception(text):
    assert upstream_problem(text) is None or isinstance(upstream_problem(text), str)


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ('{ openai = "http://o:1", anthropic = "http://a:2/v1" }', {"openai": "http://o:1", "anthropic": "http://a:2/v1"}),
        ('"http://m:1/v1"', "http://m:1/v1"),
    ],
)
def test_the_manifest_takes_one_upstream_or_a_table_per_provider(tmp_path, setting, expected):
    from evalrun.manifest import load_manifest

    (tmp_path / "manifest.toml").write_text(f"[models]\nupstream = {setting}\n")
    assert load_manifest(tmp_path / "manifest.toml").models.upstream == expected


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('{ openia = "http://o:1" }', "'openia' is no provider evalrun routes; use openai or anthropic"),
        ('{ anthropic = "http://a:2/v1/messages" }',
         'anthropic: is an endpoint, not a base URL (the SDK adds /messages itself, so it would be doubled); '
         'use "http://a:2/v1"'),
        ('"http://m:1/v1/chat/completions"', 'use "http://m:1/v1"'),
    ],
)
def test_a_bad_manifest_upstream_is_one_line_at_load(tmp_path, setting, message):
    from evalrun.errors import ManifestError
    from evalrun.manifest import load_manifest

    (tmp_path / "manifest.toml").write_text(f"[models]\nupstream = {setting}\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path / "manifest.toml")
    text = str(caught.value)
    assert "models.upstream" in text and message in text and "\n" not in text, text
