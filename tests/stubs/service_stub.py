"""A stand-in service for tests/services/test_services.py.

Modes (argv[1]):
  serve        listen on 127.0.0.1:$PORT and answer every connection.
               $GRANDCHILD_PIDFILE: first spawn a grandchild (same group) and write its pid there.
               $DIE_TRIGGER: exit 1, with a last log line, once that file exists.
               $IGNORE_TERM: ignore SIGTERM (only SIGKILL stops it).
  never        print a few lines and never listen.
  crash        print a complaint and exit 3 at once.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time


def _say(text: str) -> None:
    print(text, flush=True)


def _watch_trigger(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.05)
    _say("fatal: lost connection to the upstream, exiting")
    os._exit(1)


def serve() -> None:
    if os.environ.get("IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pidfile = os.environ.get("GRANDCHILD_PIDFILE")
    if pidfile:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(pidfile + ".tmp", "w") as fh:
            fh.write(str(child.pid))
        os.replace(pidfile + ".tmp", pidfile)
    trigger = os.environ.get("DIE_TRIGGER")
    if trigger:
        threading.Thread(target=_watch_trigger, args=(trigger,), daemon=True).start()
    port = int(os.environ["PORT"])
    server = socket.create_server(("127.0.0.1", port))
    _say(f"listening on 127.0.0.1:{port}")
    while True:
        conn, _ = server.accept()
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        conn.close()


def never() -> None:
    _say("starting up")
    _say("waiting for config from the control plane")
    time.sleep(600)


def crash() -> None:
    _say("error: config key 'port' is missing")
    sys.exit(3)


if __name__ == "__main__":
    {"serve": serve, "never": never, "crash": crash}[sys.argv[1]]()
