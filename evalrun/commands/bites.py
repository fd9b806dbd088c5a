"""``evalrun bites [TIER]``: prove each declared bite turns its checks red (see evalrun.bites)."""

from __future__ import annotations

import os

from evalrun.bites.run import BitesRequest, run_bites
from evalrun.reports_out.terminal import Console


def bites(request: BitesRequest, console: Console) -> int:
    return run_bites(request, console, os.environ)
