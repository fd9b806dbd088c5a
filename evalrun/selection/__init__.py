"""Narrowing a plan: --changed-since (git), --shard I/N (auto: the CI's variables), --last-failed, the
durations that balance the shards, and running from a clean checkout."""
