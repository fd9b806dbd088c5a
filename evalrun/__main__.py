"""``python -m evalrun``: the same as the ``evalrun`` command."""

from evalrun.cli import main

if __name__ == "__main__":
    main()
