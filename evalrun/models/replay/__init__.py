"""The record/replay model proxy (``proxy.ReplayProxy`` tells the whole story): fixtures, upstream, usage, budgets."""
