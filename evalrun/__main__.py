"""The ``evalrun`` command and ``python -m evalrun``.

The entry point imports nothing heavy before it can catch Ctrl-C: an
interrupt while typer and rich load is exit 130 with one line, never a
traceback.
"""

import sys


def main() -> None:
    try:
        from evalrun.cli import main as cli_main

        code = cli_main()
    except KeyboardInterrupt:
        print("evalrun: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
