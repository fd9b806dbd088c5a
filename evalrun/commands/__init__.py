"""One module per command; each is a function of typed arguments returning an exit code."""
