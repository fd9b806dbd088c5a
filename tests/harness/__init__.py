"""The test harness: what every test of evalrun builds on, importable as ``harness``.

tests/conftest.py loads :mod:`harness.plugin` (fixtures and hooks) through
``pytest_plugins``; pyproject.toml's ``[tool.pytest.ini_options] pythonpath``
puts tests/ (this package) and evals/lib/ (the fork server, shared with the
repository's own evals) on the path. Test modules import helpers from here or
from a submodule, never from another test module:

- :mod:`harness.paths`: the checkout, tests/ and its stub programs and assets;
- :mod:`harness.project`: ``Project`` (write files, ``.run(...)`` the real evalrun), scorer snippets;
- :mod:`harness.manifest_builder`: ``manifest(an_eval(...), tiers=...)`` and ``replayed_pair``: a manifest.toml
  and its evals' files from Python values;
- :mod:`harness.leaks`: which processes this one started (the leak gate);
- :mod:`harness.processes`, :mod:`harness.waiting`: Ctrl-C, a user with no home, bounded waits;
- fake servers and upstreams (:mod:`harness.servers`, :mod:`harness.fakes_upstream`),
  real eval tools (:mod:`harness.eval_tools`), a CI workflow runner
  (:mod:`harness.workflow_runner`) and the projects several test modules share;
- :mod:`harness.session`: ``make_session``, the ``Session`` of an in-process call of a command or the pipeline.
"""

from harness.manifest_builder import an_eval, manifest, replayed_pair
from harness.paths import ASSETS, HARNESS_PYTHONPATH, PRODUCERS, REPO, SCORERS, STUBS, TESTS
from harness.processes import STRANGER, as_a_user_with_no_home, default_sigint, needs_root
from harness.project import Project, RunOutcome, eval_entry, json_scorer, warm_evalrun
from harness.waiting import finishes, wait_until

__all__ = [
    "ASSETS", "HARNESS_PYTHONPATH", "PRODUCERS", "REPO", "SCORERS", "STUBS", "TESTS", "Project", "RunOutcome", "STRANGER",
    "an_eval", "as_a_user_with_no_home", "default_sigint", "eval_entry", "finishes", "json_scorer", "manifest", "needs_root",
    "replayed_pair", "wait_until", "warm_evalrun",
]
