"""evalrun bites: each declared breakage must turn its named checks red, on a clean copy, never the working tree.

A small git repository holds a "product" (a file) and a scorer that checks
it; its bites replace the file, set an environment variable the scorer reads,
or apply a patch. A toothless check (one that passes whatever the product
says) is reported as not caught (exit 3); a bite that cannot apply, an eval
that crashes under the bite, a check name not in the report are "broken"
(exit 1), never "caught".
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SCORER = """
import json, os, sys
from pathlib import Path
if os.environ.get("GUARD_CRASH"):
    sys.exit("the product crashed the scorer")
product = Path(os.environ.get("PRODUCT_FILE", "product.txt")).read_text().strip()
checks = [
    {"name": "the product is safe", "assertions": 1, "passed": product == "safe",
     "message": None if product == "safe" else f"the product says {product!r}"},
    {"name": "toothless", "assertions": 1, "passed": True},
]
json.dump({"checks": checks}, open(os.environ["EVALRUN_REPORT"], "w"))
"""

PATCH = """\
diff --git a/evals/guard/product.txt b/evals/guard/product.txt
--- a/evals/guard/product.txt
+++ b/evals/guard/product.txt
@@ -1 +1 @@
-safe
+leaky
"""

STALE_PATCH = PATCH.replace("-safe", "-something else")


def _eval(name: str, bites: str) -> str:
    return f'[[evals]]\nname = "{name}"\ntier = "t1"\ndir = "evals/guard"\nrun = ["python", "score.py"]\n{bites}\n'


MANIFEST = (
    _eval("replaced", '[[evals.bites]]\nname = "leaky-file"\nreplace = { "product.txt" = "leaky.txt" }\nfails = ["the product is safe"]\n')
    + _eval("by-env", '[[evals.bites]]\nname = "leaky-env"\nenv = { PRODUCT_FILE = "leaky.txt" }\nfails = ["the product is safe"]\n')
    + _eval("patched", '[[evals.bites]]\nname = "leaky-patch"\npatch = "bites/leaky.patch"\nfails = ["the product is safe"]\n')
    + _eval("toothless", '[[evals.bites]]\nname = "leaky-file"\nreplace = { "product.txt" = "leaky.txt" }\nfails = ["toothless"]\n')
    + _eval("stale", '[[evals.bites]]\nname = "stale-patch"\npatch = "bites/stale.patch"\nfails = ["the product is safe"]\n')
    + _eval("crash", '[[evals.bites]]\nname = "crash"\nenv = { GUARD_CRASH = "1" }\nfails = ["the product is safe"]\n')
    + _eval("typo", '[[evals.bites]]\nname = "leaky-file"\nreplace = { "product.txt" = "leaky.txt" }\nfails = ["the product is saf"]\n')
)


def _git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin", "HOME": str(root)}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(project):
    proj = project({
        "manifest.toml": MANIFEST,
        "evals/guard/score.py": SCORER,
        "evals/guard/product.txt": "safe\n",
        "evals/guard/leaky.txt": "leaky\n",
        "evals/guard/bites/leaky.patch": PATCH,
        "evals/guard/bites/stale.patch": STALE_PATCH,
        ".gitignore": ".evalrun/\n",
    })
    _git(proj.root, "init", "-q")
    _git(proj.root, "add", "-A")
    _git(proj.root, "commit", "-qm", "guarded product")
    return proj


def _results(proj, tier: str = "t1") -> dict:
    return json.loads((proj.root / ".evalrun" / "results" / f"bites-{tier}.json").read_text())


def test_replace_env_and_patch_bites_are_caught_and_the_working_tree_is_untouched(repo) -> None:
    r = repo.run("bites", "t1", "--eval", "replaced", "--eval", "by-env", "--eval", "patched", "-j", "2")
    assert r.code == 0, r.output
    for name in ("replaced: bite leaky-file", "by-env: bite leaky-env", "patched: bite leaky-patch"):
        assert any(line.startswith("CAUGHT") and name in line for line in r.out.splitlines()), r.out
    assert "3 caught, 0 not caught, 0 broken" in r.out
    assert "evalrun bites t1: every bite caught (exit 0)" in r.out
    results = _results(repo)
    assert [e["metrics"]["outcome"] for e in results["evals"]] == ["caught"] * 3
    check = results["evals"][0]["checks"][0]
    assert check["name"] == "the product is safe" and check["passed"]
    assert "failed under the bite, as it must: the product says 'leaky'" in check["message"]
    assert (repo.root / "evals/guard/product.txt").read_text() == "safe\n"  # bites never touch the working tree
    assert _git(repo.root, "status", "--porcelain") == ""


def test_a_toothless_check_is_not_caught_and_exits_3(repo) -> None:
    r = repo.run("bites", "t1", "--eval", "toothless")
    assert r.code == 3, r.output
    assert 'not caught: toothless: check "toothless" passed with product.txt replaced by leaky.txt: it cannot fail this way' in r.out
    assert "0 caught, 1 not caught, 0 broken" in r.out
    result = _results(repo)["evals"][0]
    assert result["status"] == "failed" and result["metrics"]["outcome"] == "not caught"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("stale", "the bite did not apply: patch bites/stale.patch does not apply"),
        ("crash", "the eval error under the bite"),
        ("typo", 'check "the product is saf" is not in the eval\'s report under the bite'),
    ],
)
def test_a_bite_that_proves_nothing_is_broken_not_caught_and_exits_1(repo, name: str, says: str) -> None:
    r = repo.run("bites", "t1", "--eval", name)
    assert r.code == 1, r.output
    line = next(ln for ln in r.out.splitlines() if ln.startswith("BROKEN"))
    assert says in line, line
    assert _results(repo)["evals"][0]["metrics"]["outcome"] == "broken"


def test_not_caught_and_broken_together_exit_1_the_broken_first(repo) -> None:
    r = repo.run("bites", "t1", "--eval", "toothless", "--eval", "stale")
    assert r.code == 1, r.output
    assert "0 caught, 1 not caught, 1 broken" in r.out


def test_reports_show_bites(repo, tmp_path: Path) -> None:
    junit, markdown, html = tmp_path / "b.xml", tmp_path / "b.md", tmp_path / "b.html"
    r = repo.run("bites", "t1", "--eval", "replaced", "--eval", "toothless", "--junit", str(junit),
                 "--markdown", str(markdown), "--html", str(html))
    assert r.code == 3, r.output
    suites = {suite.get("name"): suite for suite in ET.parse(junit).iter("testsuite")}
    assert {"replaced: bite leaky-file", "toothless: bite leaky-file"} <= set(suites), list(suites)
    failing = [n for n, s in suites.items() if s.find("testcase/failure") is not None]
    assert failing == ["toothless: bite leaky-file"]
    text = markdown.read_text()
    assert "toothless: bite leaky-file" in text and "replaced: bite leaky-file" in text
    page = html.read_text()
    assert "toothless: bite leaky-file" in page and "not caught" in page


def test_shards_split_the_bites_and_cover_them_once(repo) -> None:
    wanted = ("--eval", "replaced", "--eval", "by-env", "--eval", "patched")
    seen = []
    for shard in ("1/2", "2/2"):
        r = repo.run("bites", "t1", *wanted, "--shard", shard)
        assert r.code == 0, r.output
        index, total = shard.split("/")
        data = json.loads((repo.root / ".evalrun/results" / f"bites-t1.shard-{index}-of-{total}.json").read_text())
        seen += [e["name"] for e in data["evals"]]
    assert sorted(seen) == ["by-env: bite leaky-env", "patched: bite leaky-patch", "replaced: bite leaky-file"]


def test_dry_lists_the_bites(repo) -> None:
    r = repo.run("dry", "t1", "--no-probe", "--eval", "patched")
    assert r.code == 0, r.output
    assert "  bite leaky-patch: patch bites/leaky.patch; must fail: the product is safe" in r.out


def test_an_uncommitted_bite_needs_worktree(repo) -> None:
    manifest = repo.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('fails = ["toothless"]', 'fails = ["the product is safe"]'))
    r = repo.run("bites", "t1", "--eval", "toothless")
    assert r.code == 3, r.output  # HEAD's manifest: still the toothless check
    r = repo.run("bites", "t1", "--eval", "toothless", "--worktree")
    assert r.code == 0, r.output  # with the uncommitted change laid on the copy


@pytest.mark.parametrize(
    ("bite", "says"),
    [
        ('name = "b"\nfails = ["x"]\n', "breaks nothing"),
        ('name = "b"\npatch = "nope.patch"\nfails = ["x"]\n', "'nope.patch' does not exist"),
        ('name = "b"\nreplace = { "product.txt" = "../../../outside" }\nfails = ["x"]\n', "lies outside the manifest's folder"),
        ('name = "b"\nenv = { X = "1" }\nfails = []\n', "fails: must not be empty"),
        ('name = "b"\nenv = { OPENAI_API_KEY = "x" }\nfails = ["x"]\n', "OPENAI_API_KEY is a model key variable"),
    ],
)
def test_a_bad_bite_is_one_line_exit_2(project, bite: str, says: str) -> None:
    proj = project({"manifest.toml": _eval("g", "[[evals.bites]]\n" + bite), "evals/guard/score.py": SCORER})
    r = proj.run("bites", "t1")
    assert r.code == 2, r.output
    assert says in r.err and len(r.err.strip().splitlines()) == 1, r.err
