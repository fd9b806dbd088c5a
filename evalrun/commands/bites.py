"""``evalrun bites [TIER]``: prove each declared bite turns its checks red (see evalrun.bites)."""

from __future__ import annotations

from evalrun.bites.run import BitesRequest, run_bites
from evalrun.session import Session


def bites(request: BitesRequest, session: Session) -> int:
    return run_bites(request, session)
