"""One plural helper and one quote helper (``evalrun.text``): a second copy drifts ("1 evals", a quote escaped
another way), so the package is scanned for copies and for plurals spelt inline.

The scorer SDK (``evalrun/scorer/``) is left out: it runs in scorers' interpreters and imports nothing of
evalrun's own beyond itself.
"""

from __future__ import annotations

import re

from harness import REPO

PACKAGE = REPO / "evalrun"
COPIES = re.compile(r"^\s*def (_?plural|counted|_?quote)\(", re.M)  # results._counted counts checks: another thing
INLINE = re.compile(r"""(\{'s' if|\{"s" if|'' if [\w.()]+ == 1 else 's'|"" if [\w.()]+ == 1 else "s"|if [\w.()]+ != 1 else '')""")


def _sources() -> dict[str, str]:
    return {p.relative_to(REPO).as_posix(): p.read_text() for p in PACKAGE.rglob("*.py")
            if "scorer" not in p.relative_to(PACKAGE).parts}


def test_plural_and_quote_are_defined_once_in_text() -> None:
    found = {(path, m.group(1)) for path, text in _sources().items() for m in COPIES.finditer(text)}
    assert found == {("evalrun/text.py", "plural"), ("evalrun/text.py", "quote")}


def test_no_plural_is_spelt_inline() -> None:
    inline = [f"{path}: {m.group(0)}" for path, text in _sources().items() for m in INLINE.finditer(text)]
    assert inline == []


def test_the_scan_sees_a_copy_and_an_inline_plural() -> None:
    assert COPIES.search("def counted(n, noun):\n") and INLINE.search("f\"{n} check{'s' if n != 1 else ''}\"")
