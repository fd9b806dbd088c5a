"""The record/replay model proxy (see ``evalrun.replay.proxy`` for the whole story)."""

from evalrun.replay.budget import BudgetMeter
from evalrun.replay.proxy import MODES, SESSION_HEADER, Mode, ProxyEvalReport, ReplayProxy

__all__ = ["MODES", "SESSION_HEADER", "BudgetMeter", "Mode", "ProxyEvalReport", "ReplayProxy"]
