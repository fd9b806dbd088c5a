"""Starts one service through ServiceManager, reports it, then waits to be SIGKILLed.

argv: STATE_DIR LOGS_DIR OUT_JSON MODE [PORT]; MODE is "stub" (tests/stubs/service_stub.py
serving on PORT) or "postgres" (the embedded PostgreSQL).
"""

import json
import os
import socket
import sys
import time
from pathlib import Path

from evalrun.secrets import known_secrets
from evalrun.services.manager import ServiceManager, ServiceSpec


def _tcp_ready(requirement: str, env) -> tuple[bool, str]:
    _, host, port = requirement.split(":")
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
        return True, ""
    except OSError as exc:
        return False, str(exc)


def main() -> None:
    state_dir, logs_dir, out, mode = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    if mode == "stub":
        stub = Path(__file__).with_name("service_stub.py")
        spec = ServiceSpec("api", (sys.executable, str(stub), "serve"), None, "tcp:127.0.0.1:${PORT}", 10.0,
                           {"PORT": sys.argv[5]}, Path.cwd())
    else:
        spec = ServiceSpec("db", None, "embedded", None, 30.0, {}, Path.cwd())
    manager = ServiceManager({spec.name: spec}, logs_dir, state_dir, dict(os.environ), _tcp_ready,
                             secrets=known_secrets(os.environ).values)
    state = manager.start(spec.name)
    info = {"ok": state.ok, "failure": state.failure, "pid": state.pid, "pgid": state.pgid,
            "data_dir": str(state.data_dir) if state.data_dir else None}
    out.with_suffix(".tmp").write_text(json.dumps(info))
    os.replace(out.with_suffix(".tmp"), out)
    time.sleep(600)  # the test SIGKILLs us here: no cleanup can run


if __name__ == "__main__":
    main()
