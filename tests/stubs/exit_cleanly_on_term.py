"""Hang until SIGTERM, then report it on stdout and exit 3, as a tidy scorer would."""

import os
import signal
import time


def on_term(signum, frame):
    os.write(1, b"got TERM, cleaning up\n")
    os._exit(3)


signal.signal(signal.SIGTERM, on_term)
os.write(1, b"ready\n")
while True:
    time.sleep(60)
