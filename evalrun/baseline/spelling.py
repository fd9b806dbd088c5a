"""How the baseline spells names and counts, in its file and in its messages.

A name is a bare TOML key when it can be (``[rls-isolation]``), else JSON-quoted
(``["chat v1"]``), which TOML reads alike and which keeps odd names (quotes,
line breaks) on one line, readably.
"""

from __future__ import annotations

import json
import re

from evalrun.text import quote

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def table_key(name: str) -> str:
    """A table's name as a message shows it: bare, or quoted."""
    return name if BARE_KEY.fullmatch(name) else quote(name)


def toml_key(name: str) -> str:
    """A key as the written form has it: bare, or JSON-quoted."""
    if BARE_KEY.fullmatch(name):
        return name
    # JSON's escapes are TOML's, but for DEL, which TOML wants escaped too.
    return json.dumps(name, ensure_ascii=False).replace("\x7f", "\\u007f")

