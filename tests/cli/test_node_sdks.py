"""A TypeScript team's app, through the official npm SDKs: one Anthropic call (``messages.create``) and one
openai chat stream, each provider at its own upstream (two local fake servers, each 404-ing the other's API,
as real providers do). ``evalrun t3 --record`` sends each call to its provider's upstream and records
200 answers only; ``evalrun t2`` replays them with both servers stopped.

The SDKs are the npm packages in ``EVALRUN_NPM_TOOLS`` (``.ci/run`` installs both by name).
"""

from __future__ import annotations

import json

from harness import manifest, replayed_pair
from harness.eval_tools import npm_package
from harness.fakes_upstream import FakeUpstream

SCORER = r"""
const fs = require("fs");
const OpenAI = require("openai");
const Anthropic = require("@anthropic-ai/sdk");

async function main() {
  const claude = new Anthropic({ maxRetries: 0 });  // ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, as set for it
  const gpt = new OpenAI({ maxRetries: 0 });  // OPENAI_API_KEY and OPENAI_BASE_URL
  const message = await claude.messages.create({
    model: "claude-3-5-haiku-latest", max_tokens: 64, messages: [{ role: "user", content: "hello claude" }] });
  const stream = await gpt.chat.completions.create({
    model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "hello gpt" }] });
  let streamed = "";
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content || "";
  const said = message.content.map((block) => block.text).join("");
  return [
    { name: "claude answered", assertions: 1, passed: said.includes("hello claude"), evidence: said },
    { name: "gpt streamed", assertions: 1, passed: streamed.includes("hello gpt"), evidence: streamed },
  ];
}

main()
  .catch((error) => [{ name: "the calls", assertions: 1, passed: false, message: String(error) }])
  .then((checks) => fs.writeFileSync(process.env.EVALRUN_REPORT, JSON.stringify({ checks })));
"""


def test_each_providers_npm_sdk_reaches_its_own_upstream_and_replays_without_it(project) -> None:
    modules = npm_package("openai").parent
    npm_package("@anthropic-ai/sdk")
    proj = project(manifest(*replayed_pair(
        "app", ["node", "score.cjs"], env={"NODE_PATH": str(modules)}, files={"score.cjs": SCORER},
    )).project())
    with FakeUpstream(provider="openai", stream_usage="asked") as openai_api, \
            FakeUpstream(provider="anthropic") as anthropic_api:
        recorded = proj.run("t3", "--record", env={
            "OPENAI_API_KEY": "sk-fake-node-openai-0123456789", "ANTHROPIC_API_KEY": "sk-ant-fake-node-0123456789",
            "EVALRUN_UPSTREAM_OPENAI": f"{openai_api.url}/v1", "EVALRUN_UPSTREAM_ANTHROPIC": anthropic_api.url,
        })
        routes = ([r.path for r in openai_api.requests], [r.path for r in anthropic_api.requests])
    assert recorded.code == 0, recorded.output
    assert routes == (["/v1/chat/completions"], ["/v1/messages"])  # each call at its own provider, once
    assert f"anthropic: {anthropic_api.url} (EVALRUN_UPSTREAM_ANTHROPIC)" in recorded.output, recorded.output
    fixtures = sorted((proj.root / "evals/app/fixtures").rglob("*.json"))
    assert [json.loads(f.read_text())["response"]["status"] for f in fixtures] == [200, 200]

    replayed = proj.run("t2")  # both servers are gone: the answers come from the fixtures
    assert replayed.code == 0, replayed.output
    checks = {c["name"]: c for c in proj.eval_result("app", "t2")["checks"]}
    assert checks["gpt streamed"]["passed"] and checks["claude answered"]["passed"], checks
