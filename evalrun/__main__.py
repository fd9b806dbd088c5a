"""The ``evalrun`` command and ``python -m evalrun``.

The entry point imports nothing heavy before it can catch Ctrl-C: an
interrupt while typer and rich load is exit 130 with one line, never a
traceback. A platform evalrun does not support (Windows: no ``fcntl``, no
POSIX process groups) is refused here, before anything else, with one line
and exit 2 (docs/decisions.md).
"""

import sys

UNSUPPORTED_EXIT = 2  # a usage error: the run cannot be made here, whatever the arguments


def unsupported_platform() -> str | None:
    """Why evalrun cannot run on this platform, or None: it needs POSIX file locks (``fcntl``)."""
    try:
        import fcntl  # noqa: F401 - cheap: a built-in module where it exists
    except ImportError:
        return (
            f"evalrun: error: this platform ({sys.platform}) is not supported: evalrun needs POSIX file locks "
            "and process groups (no fcntl module here); run it on Linux or macOS (on Windows: in WSL 2)"
        )
    return None


def main() -> None:
    from evalrun import collector

    collector.pause()  # until the invocation's session is built (evalrun.collector)
    refused = unsupported_platform()
    if refused is not None:
        print(refused, file=sys.stderr)
        sys.exit(UNSUPPORTED_EXIT)
    try:
        from evalrun.cli import main as cli_main

        code = cli_main()
    except KeyboardInterrupt:
        print("evalrun: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
