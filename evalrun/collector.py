"""The cyclic garbage collector, paused while evalrun starts.

evalrun's start (typer, pydantic building the manifest's schema, the modules a
command needs) makes a few hundred thousand objects that live until the
process ends. The collector, run again and again as they are made, walks them
and frees nothing: about 15 ms of CPU, a tenth of ``evalrun t1`` over one
scorer (``bench/bench_overhead.py``). So the entry point (``evalrun.__main__``,
what the ``evalrun`` command runs) pauses it, and the session, built once per
invocation once the command's modules are in, resumes it: what the start made
is moved out of its way (``gc.freeze``: never walked again, never freed, as it
would not have been), and from there on it collects as always, through a long
run, a merge or the replay server.

Only a pause of this module's own is resumed: a caller whose collector was
already off (a test, ``--from-results``' reader), or evalrun called as a
library, is left as it was.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop the collector for evalrun's start, if it runs."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """The start is over: freeze what it made and collect again. Does nothing unless ``pause`` stopped it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
