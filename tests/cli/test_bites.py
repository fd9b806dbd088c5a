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
from typing import Any

import pytest
from harness import Project, an_eval, manifest
from harness.manifest_builder import EvalBlock
from harness.stub_projects import GUARD_PATCH

SCORER = """
import json, os, sys
from pathlib import Path
if os.environ.get("GUARD_CRASH"):
    sys.exit("the product crashed the scorer")
product = Path(os.environ.get("PRODUCT_FILE", "product.txt")).read_text().strip()
if product == "{malformed":  # a replacement the check cannot even parse: it fails before asserting anything
    json.dump({"checks": [{"name": "the product is safe", "assertions": 0, "passed": False,
                           "message": "JSONDecodeError: Expecting property name"}]}, open(os.environ["EVALRUN_REPORT"], "w"))
    sys.exit(0)
checks = [
    {"name": "the product is safe", "assertions": 1, "passed": product == "safe",
     "message": None if product == "safe" else f"the product says {product!r}"},
    {"name": "toothless", "assertions": 1, "passed": True},
]
json.dump({"checks": checks}, open(os.environ["EVALRUN_REPORT"], "w"))
"""


STALE_PATCH = GUARD_PATCH.replace("-safe", "-something else")


def _eval(name: str, *bites: dict[str, Any]) -> EvalBlock:
    return an_eval(name, dir="evals/guard", bites=list(bites))


def _bite(name: str, fails: tuple[str, ...] = ("the product is safe",), **keys: Any) -> dict[str, Any]:
    return {"name": name, **keys, "fails": list(fails)}


LEAKY = {"product.txt": "leaky.txt"}
MANIFEST = manifest(
    _eval("replaced", _bite("leaky-file", replace=LEAKY)),
    _eval("by-env", _bite("leaky-env", env={"PRODUCT_FILE": "leaky.txt"})),
    _eval("patched", _bite("leaky-patch", patch="bites/leaky.patch")),
    _eval("toothless", _bite("leaky-file", ("toothless",), replace=LEAKY)),
    _eval("stale", _bite("stale-patch", patch="bites/stale.patch")),
    _eval("crash", _bite("crash", env={"GUARD_CRASH": "1"})),
    _eval("malformed", _bite("bad-file", replace={"product.txt": "malformed.txt"})),
    _eval("same", _bite("same-file", replace={"product.txt": "same.txt"})),
    _eval("typo", _bite("leaky-file", ("the product is saf",), replace=LEAKY)),
).text


def _git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin", "HOME": str(root)}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


def _guarded_repo(proj: Project) -> Project:
    """The guarded product, its scorer and its bites, committed in a fresh git repository at ``proj``."""
    proj.write({
        "manifest.toml": MANIFEST,
        "evals/guard/score.py": SCORER,
        "evals/guard/product.txt": "safe\n",
        "evals/guard/leaky.txt": "leaky\n",
        "evals/guard/malformed.txt": "{malformed\n",
        "evals/guard/same.txt": "safe\n",
        "evals/guard/bites/leaky.patch": GUARD_PATCH,
        "evals/guard/bites/stale.patch": STALE_PATCH,
        ".gitignore": ".evalrun/\n",
    })
    _git(proj.root, "init", "-q")
    _git(proj.root, "add", "-A")
    _git(proj.root, "commit", "-qm", "guarded product")
    return proj


@pytest.fixture
def repo(tmp_path: Path) -> Project:
    return _guarded_repo(Project(tmp_path))


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
        ("malformed", 'check "the product is safe" failed under the bite before making any assertion'),
        ("same", "replace product.txt: same.txt has the same content, so the bite changes nothing"),
    ],
)
def test_a_bite_that_proves_nothing_is_broken_not_caught_and_exits_1(repo, name: str, says: str) -> None:
    r = repo.run("bites", "t1", "--eval", name)
    assert r.code == 1, r.output
    line = next(ln for ln in r.out.splitlines() if ln.startswith("BROKEN"))
    assert says in line, line
    assert _results(repo)["evals"][0]["metrics"]["outcome"] == "broken"


def test_a_patch_bite_applies_with_tmpdir_inside_a_git_work_tree(repo) -> None:
    """A CI that keeps temp files in its workspace: the clean copy lies inside a repository, and
    ``git apply`` there must still patch the copy (not find the outer repository and do nothing)."""
    tmp = repo.root / "tmp"
    tmp.mkdir()
    r = repo.run("bites", "t1", "--eval", "patched", env={"TMPDIR": str(tmp)})
    assert r.code == 0, r.output
    assert any(line.startswith("CAUGHT") and "patched: bite leaky-patch" in line for line in r.out.splitlines()), r.out


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
    [header] = [line for line in r.out.splitlines() if line.startswith("network: ")]  # the bites' run phase, once
    assert {s.find("properties/property[@name='network']").get("value") for s in suites.values()} == {
        header.removeprefix("network: ")}
    assert header in page


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
        (_bite("b", ("x",)), "breaks nothing"),
        (_bite("b", ("x",), patch="nope.patch"), "'nope.patch' does not exist"),
        (_bite("b", ("x",), replace={"product.txt": "../../../outside"}), "lies outside the manifest's folder"),
        (_bite("b", (), env={"X": "1"}), "fails: must not be empty"),
        (_bite("b", ("x",), replace={"fixtures": "score.py"}), "'fixtures' is a folder; a bite replaces one file"),
        (_bite("b", ("x",), env={"OPENAI_API_KEY": "x"}), "OPENAI_API_KEY is a model key variable"),
    ],
)
def test_a_bad_bite_is_one_line_exit_2(project, bite: dict[str, Any], says: str) -> None:
    proj = project({"manifest.toml": manifest(_eval("g", bite)).text, "evals/guard/score.py": SCORER,
                    "evals/guard/fixtures/cases.json": "[]\n"})
    r = proj.run("bites", "t1")
    assert r.code == 2, r.output
    assert says in r.err and len(r.err.strip().splitlines()) == 1, r.err


# -- evalrun merge of bites shards -------------------------------------------------
#
# One repository, sharded bites run once (module fixture): three caught bites in
# two shards (sorted: by-env, patched, replaced -> 1/2 holds by-env and replaced,
# 2/2 holds patched), and a caught and a toothless bite in two more shards.

GREEN = ("--eval", "replaced", "--eval", "by-env", "--eval", "patched")


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    proj = _guarded_repo(Project(tmp_path_factory.mktemp("bites-merge")))
    shard = proj.root / ".evalrun" / "results"
    out: dict = {"proj": proj, "shards": {}}
    for index in (1, 2):
        out["shards"][index] = proj.run("bites", "t1", *GREEN, "--shard", f"{index}/2")
    one, two = shard / "bites-t1.shard-1-of-2.json", shard / "bites-t1.shard-2-of-2.json"
    out["one"], out["two"] = one, two
    out["merge"] = proj.run("merge", str(one), str(two), "--junit", "merged.xml", "--markdown", "merged.md")
    out["merged"] = shard / "bites-t1.json"
    out["history_after_merge"] = (proj.root / ".evalrun" / "history.sqlite").exists()
    out["missing"] = proj.run("merge", str(one))
    for index in (1, 2):
        proj.run("bites", "t1", "--eval", "replaced", "--eval", "toothless", "--shard", f"{index}/2",
                 "--json", f"toothless-{index}.json")
    out["toothless"] = proj.run("merge", "toothless-1.json", "toothless-2.json", "--json", "toothless.json")
    out["run_shard"] = proj.run("t1", "--eval", "replaced", "--shard", "1/2", "--json", "run-1.json")
    out["mixed"] = proj.run("merge", str(one), "run-1.json")
    out["strict"] = proj.run("merge", str(one), str(two), "--strict-baseline", "--json", "strict.json")
    return out


def _one_error_line(r) -> str:  # noqa: ANN001
    assert r.code == 2, r.output
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    return lines[0]


def test_two_bites_shards_merge_into_one_green_bites_verdict(sharded: dict) -> None:
    assert [r.code for r in sharded["shards"].values()] == [0, 0], [r.output for r in sharded["shards"].values()]
    r = sharded["merge"]
    assert r.code == 0, r.output
    lines = r.out.splitlines()
    assert lines[0] == "bites of t1: 3 bites merged from 2 shards"
    for name in ("by-env: bite leaky-env", "patched: bite leaky-patch", "replaced: bite leaky-file"):
        assert any(line.startswith("CAUGHT") and name in line for line in lines), r.out
    assert "3 caught, 0 not caught, 0 broken" in lines
    assert "evalrun bites t1: every bite caught (exit 0)" in lines
    merged = json.loads(sharded["merged"].read_text())
    assert merged["kind"] == "bites" and merged["exit_code"] == 0
    assert sorted(e["name"] for e in merged["evals"]) == [
        "by-env: bite leaky-env", "patched: bite leaky-patch", "replaced: bite leaky-file"]
    assert {e["metrics"]["outcome"] for e in merged["evals"]} == {"caught"}
    # every bite's run phase was isolated alike (as this machine allows): the merge says so as the shards did
    shards = [json.loads(sharded[k].read_text())["network"] for k in ("one", "two")]
    assert shards[0] is not None and merged["network"] == shards[0] == shards[1]
    assert any(line.startswith("network: ") for line in sharded["shards"][1].out.splitlines())


def test_merged_bites_are_not_compared_with_the_baseline_nor_written_to_the_history(sharded: dict) -> None:
    assert sharded["merge"].code == 0, sharded["merge"].output
    assert json.loads(sharded["merged"].read_text())["baseline"] is None
    assert "baseline" not in sharded["merge"].out
    assert sharded["history_after_merge"] is False


def test_merged_bites_write_junit_and_markdown(sharded: dict) -> None:
    root = sharded["proj"].root
    suites = {suite.get("name") for suite in ET.parse(root / "merged.xml").iter("testsuite")}
    assert {"by-env: bite leaky-env", "patched: bite leaky-patch", "replaced: bite leaky-file"} <= suites, suites
    assert "patched: bite leaky-patch" in (root / "merged.md").read_text()
    assert "junit: merged.xml" in sharded["merge"].out and "markdown: merged.md" in sharded["merge"].out


def test_a_bite_not_caught_in_one_shard_makes_the_merge_exit_3_naming_it(sharded: dict) -> None:
    r = sharded["toothless"]
    assert r.code == 3, r.output
    assert ('not caught: toothless: check "toothless" passed with product.txt replaced by leaky.txt: '
            "it cannot fail this way") in r.out
    assert "1 caught, 1 not caught, 0 broken" in r.out
    assert "evalrun bites t1: a check cannot fail (exit 3)" in r.out
    merged = json.loads((sharded["proj"].root / "toothless.json").read_text())
    assert merged["exit_code"] == 3


def test_a_missing_bites_shard_is_exit_2_naming_its_bites(sharded: dict) -> None:
    line = _one_error_line(sharded["missing"])
    assert "bites shard 2/2 (bites-t1.shard-2-of-2.json) is missing (have 1/2)" in line, line
    assert 'no results file holds its 1 bite: "patched: bite leaky-patch"' in line, line


def test_strict_baseline_on_bites_shards_is_refused_in_one_line_and_writes_nothing(sharded: dict) -> None:
    line = _one_error_line(sharded["strict"])
    assert line == ("evalrun: error: merge: --strict-baseline does not apply to bites shards (bites are never compared"
                    " with the baseline); drop it"), line
    assert not (sharded["proj"].root / "strict.json").exists()


def test_bites_and_run_shards_do_not_merge(sharded: dict) -> None:
    assert sharded["run_shard"].code == 0, sharded["run_shard"].output
    assert "kind" not in json.loads((sharded["proj"].root / "run-1.json").read_text())  # only bites say their kind
    line = _one_error_line(sharded["mixed"])
    assert f"{sharded['one']} holds bites (evalrun bites) but run-1.json a run's evals" in line, line


def _edited(sharded: dict, name: str, edit) -> Path:  # noqa: ANN001
    """A copy of shard 2/2's file, changed by ``edit``, beside the others."""
    data = json.loads(sharded["two"].read_text())
    edit(data, json.loads(sharded["one"].read_text()))
    path = sharded["proj"].root / name
    path.write_text(json.dumps(data))
    return path


def test_a_bite_in_two_shards_is_exit_2_naming_both_files(sharded: dict) -> None:
    twice = _edited(sharded, "twice.json", lambda two, one: two["evals"].append(one["evals"][0]))
    line = _one_error_line(sharded["proj"].run("merge", str(sharded["one"]), str(twice)))
    assert f'"{json.loads(sharded["one"].read_text())["evals"][0]["name"]}" is in both {sharded["one"]} and {twice}' in line


def test_a_bite_no_shard_ran_is_exit_2_naming_it(sharded: dict) -> None:
    dropped = _edited(sharded, "dropped.json", lambda two, one: two["evals"].clear())
    line = _one_error_line(sharded["proj"].run("merge", str(sharded["one"]), str(dropped)))
    assert 'no shard\'s results hold 1 bite of t1: "patched: bite leaky-patch"' in line, line


def test_bites_of_two_tiers_or_split_differently_do_not_merge(sharded: dict) -> None:
    other_tier = _edited(sharded, "t2.json", lambda two, one: two.update(tier="t2"))
    line = _one_error_line(sharded["proj"].run("merge", str(sharded["one"]), str(other_tier)))
    assert f"{other_tier}: bites t2, not t1; merge the bites of one tier" in line, line
    split = _edited(sharded, "split.json", lambda two, one: two["selection"].update(shard_split=["0" * 12]))
    line = _one_error_line(sharded["proj"].run("merge", str(sharded["one"]), str(split)))
    assert "split the bites differently" in line, line
