"""Narrowing a plan: --changed-since (git), --shard I/N, and running from a clean checkout."""
