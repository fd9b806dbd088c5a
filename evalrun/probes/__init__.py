"""Preconditions: probes that say whether an eval or a tier may run, and the decision per eval."""
