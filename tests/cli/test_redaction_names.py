"""A key that shares characters with an eval's name: the name stays, the key stays out, the run is not a crash."""

from __future__ import annotations

from harness import an_eval, manifest


def test_a_key_sharing_eight_characters_with_an_eval_name_neither_renames_the_eval_nor_crashes(project) -> None:
    # Redaction cuts any 8-character piece of a key out of what a scorer wrote; the eval's own name
    # is the manifest's, and the run looks its eval up by it (this was exit 70: KeyError 'judge[redacted ...]live').
    proj = project({
        "manifest.toml": manifest(an_eval("judge-anchors-live", ["python", "s.py"], dir="e")).text,
        "e/s.py": "import sys\nfrom evalrun import scorer\n"
                  "with scorer.check('says sk-test-anchors-0f1e2d3c4b5a') as c:\n    c.true(True)\n",
    })
    r = proj.run("t1", env={"OPENAI_API_KEY": "sk-test-anchors-0f1e2d3c4b5a"})
    assert r.code == 0, r.output
    result = proj.eval_result("judge-anchors-live")
    assert result["status"] == "passed"
    assert "0f1e2d3c4b5a" not in result["checks"][0]["name"]  # what the scorer wrote is still redacted
