"""What model calls cost, from the manifest's ``[models.prices]``; never looked up on the network.

This module owns the price of one call and the run's cost record (the cost
line's words are ``evalrun.reports_out.describe``). A price is per million
tokens, input and output apart::

    [models.prices]
    "gpt-4o-mini" = { input = 0.15, output = 0.60 }

A model is priced by its exact name, else by the longest priced name it
extends with ``-`` (``gpt-4o-mini`` prices ``gpt-4o-mini-2024-07-18``, the
name the API answers with). A call whose model has no price is *unpriced*:
counted apart and shown as such, never as free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from evalrun.text import plural

MILLION = 1_000_000


class PriceLike(Protocol):
    @property
    def input(self) -> float: ...

    @property
    def output(self) -> float: ...


def price_for(prices: Mapping[str, PriceLike], model: str) -> PriceLike | None:
    """The price of ``model``: its own, else the longest priced name it extends with '-'."""
    if model in prices:
        return prices[model]
    stems = [name for name in prices if model.startswith(name + "-")]
    return prices[max(stems, key=len)] if stems else None


def call_cost(prices: Mapping[str, PriceLike], models: Iterable[str], input_tokens: int, output_tokens: int) -> float | None:
    """The cost in USD of one call, or None when its model is unknown or has no price."""
    names = sorted(models)
    if not names:
        return None
    price = price_for(prices, names[0])  # a call answers with one model; several is a proxy oddity
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output) / MILLION


def run_cost(records: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The run's cost from its evals' ``models`` records, or None when no eval reports one."""
    costs = [r["cost"] for r in records if r and isinstance(r.get("cost"), dict)]
    if not costs:
        return None
    return {
        "usd": sum(float(c.get("usd") or 0) for c in costs),
        "unpriced_calls": sum(int(c.get("unpriced_calls") or 0) for c in costs),
        "unpriced_models": sorted({m for c in costs for m in c.get("unpriced_models") or []}),
    }


def unpriced_note(cost: Mapping[str, Any]) -> str:
    """``3 unpriced calls (model-x: no price in [models.prices])``, or "" when every call had a price.

    The words a result's message carries when a usd budget could not count such
    calls; the run's cost line (``evalrun.reports_out.describe.describe_cost``) says the same.
    """
    unpriced = int(cost.get("unpriced_calls") or 0)
    if not unpriced:
        return ""
    names = ", ".join(cost.get("unpriced_models") or []) or "unknown model"
    return f"{plural(unpriced, 'unpriced call')} ({names}: no price in [models.prices])"
