"""What model calls cost, from the manifest's ``[models.prices]``; never looked up on the network.

This module owns the price of one call and the run's cost line. A price is
per million tokens, input and output apart::

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


def format_usd(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"


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


def describe_cost(cost: Mapping[str, Any]) -> str:
    """``$0.0123`` or ``$0.0123 + 3 unpriced calls (model-x has no price in [models.prices])``."""
    text = format_usd(float(cost.get("usd") or 0))
    unpriced = int(cost.get("unpriced_calls") or 0)
    if unpriced:
        names = ", ".join(cost.get("unpriced_models") or []) or "unknown model"
        text += f" + {unpriced} unpriced call{'s' if unpriced != 1 else ''} ({names}: no price in [models.prices])"
    return text
