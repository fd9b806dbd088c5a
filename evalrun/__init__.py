"""evalrun: a gate for eval suites that can fail.

Importing the package is cheap on purpose: scorers import ``evalrun.scorer``
(stdlib only) and ``evalrun --version`` must not pull in httpx, psycopg or
jsonschema.
"""

__version__ = "0.1.0"
