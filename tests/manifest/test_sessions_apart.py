"""Two evals never record into one replay session (``evalrun.manifest.rules``): names that fold alike are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalrun.errors import ManifestError
from evalrun.manifest import load_manifest
from harness import an_eval, manifest
from harness.manifest_builder import EvalBlock


def _write(tmp_path: Path, *evals: EvalBlock) -> Path:
    (tmp_path / "e").mkdir()
    path = tmp_path / "manifest.toml"
    path.write_text(manifest(*evals, models={"upstream": "http://127.0.0.1:9"}).text)
    return path


def _eval(name: str, tier: str = "t2", **keys: Any) -> EvalBlock:
    return an_eval(name, ["python", "s.py"], tier=tier, dir="e", model=True, **keys)


def test_two_names_that_fold_to_one_folder_in_one_dir_are_one_line_naming_both(tmp_path: Path) -> None:
    path = _write(tmp_path, _eval("chat v1"), _eval("chat-v1", tier="t3"))
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    message = str(caught.value)
    assert 'evals[1] ("chat-v1") and evals[0] ("chat v1") would record into one replay session, e/fixtures/chat-v1/' in message
    assert 'fixtures_for = "chat v1"' in message and "\n" not in message


def test_sharing_on_purpose_and_evals_without_models_are_no_clash(tmp_path: Path) -> None:
    shared = (_eval("chat"), _eval("chat-live", tier="t3", fixtures_for="chat"))
    plain = an_eval("chat_", ["python", "s.py"], tier="t2", dir="e")  # no model: no session
    loaded = load_manifest(_write(tmp_path, *shared, plain))
    assert [e.name for e in loaded.evals] == ["chat", "chat-live", "chat_"]
