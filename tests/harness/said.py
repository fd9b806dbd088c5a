"""What the run says of leftovers and stopped services: the domain returns records, ``reports_out`` words them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalrun.leftovers import reap_leftovers
from evalrun.reports_out.run_notes import leftover_line, stopped_service_line


def reaped(state_dir: Path, **kwargs: Any) -> list[str]:
    """``reap_leftovers(state_dir)``, each leftover as the run's warning line."""
    return [leftover_line(x) for x in reap_leftovers(state_dir, **kwargs)]


def stopped(services: Any) -> list[str]:
    """``services.stop_all()``, each stopped service as the run's note."""
    return [stopped_service_line(x) for x in services.stop_all()]
