"""An option of a plain type is coerced without typer's pydantic adapter, to exactly what the adapter gives.

``evalrun.cli._plain_coercion`` hands typer a coercion of its own for str, list-of-str, bool, a bounded-below int
and a Path default; any value it cannot plainly take goes to typer's adapter, built then. Each value below is
parsed twice, with and without it: the same value comes out, or the same error (class and words).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import pytest
import typer
import typer.main
from hypothesis import given, settings
from hypothesis import strategies as st

import evalrun.cli as cli

got: list[object] = []

app = cli._Typer()


@app.command()
def probe(
    name: Annotated[Optional[str], typer.Option("--name")] = None,
    words: Annotated[Optional[list[str]], typer.Option("--word")] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=0)] = 0,
    repeat: Annotated[Optional[int], typer.Option("--repeat", min=1)] = None,
    flag: Annotated[bool, typer.Option("--flag")] = False,
    where: Annotated[Path, typer.Option("--where")] = Path("manifest.toml"),
    out: Annotated[Optional[Path], typer.Option("--out")] = None,
) -> None:
    got.append((name, words, jobs, repeat, flag, where, out))


@app.command()
def other() -> None:  # a second command: typer then parses "probe" as a subcommand, as evalrun's are
    pass


def _parse(args: list[str], plain: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    got.clear()
    with monkeypatch.context() as m:
        if not plain:
            m.setattr(cli, "_plain_coercion", lambda params: None)
        try:
            typer.main.get_command(app).main(["probe", *args], standalone_mode=False)
        except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
            return (type(exc).__name__, getattr(exc, "format_message", lambda: str(exc))())
    (values,) = got
    return tuple((type(v).__name__, v) for v in values)


def _same(args: list[str], monkeypatch: pytest.MonkeyPatch) -> object:
    plain = _parse(args, True, monkeypatch)
    assert plain == _parse(args, False, monkeypatch), args
    return plain


NUMBERS = st.one_of(st.integers(-5, 10**20).map(str), st.text(alphabet="0123456789 +-_.xe\u0661", max_size=5))
TEXT = st.text(st.characters(blacklist_categories=()), max_size=8)  # surrogates too: argv's undecodable bytes


@settings(max_examples=150, deadline=None)
@given(jobs=NUMBERS, repeat=NUMBERS)
def test_ints_come_out_as_the_adapter_makes_them_or_refused_alike(jobs: str, repeat: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same(["--jobs", jobs], monkeypatch)
        _same(["--repeat", repeat], monkeypatch)


@settings(max_examples=100, deadline=None)
@given(name=TEXT, words=st.lists(TEXT, max_size=3), out=TEXT.filter(lambda t: t and "\0" not in t))
def test_strings_lists_and_paths_come_out_alike(name: str, words: list[str], out: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        args = ["--name", name, "--out", out, "--where", out]
        for word in words:
            args += ["--word", word]
        _same(args, monkeypatch)


def test_the_defaults_and_flags_come_out_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _same([], monkeypatch) == (("NoneType", None), ("NoneType", None), ("int", 0), ("NoneType", None),
                                      ("bool", False), ("PosixPath", Path("manifest.toml")), ("NoneType", None))
    assert _same(["--flag", "--jobs", "007", "--word", "a"], monkeypatch)[:5] == (
        ("NoneType", None), ("list", ["a"]), ("int", 7), ("NoneType", None), ("bool", True))
    assert _same(["--jobs", "-1"], monkeypatch)[0] == "BadParameter"


def test_a_plain_parse_builds_no_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    import pydantic.type_adapter

    built: list[object] = []
    init = pydantic.type_adapter.TypeAdapter.__init__

    def counting(self, tp, *args, **kwargs) -> None:  # noqa: ANN001, ANN002, ANN003
        built.append(tp)
        init(self, tp, *args, **kwargs)

    monkeypatch.setattr(pydantic.type_adapter.TypeAdapter, "__init__", counting)
    _parse(["--flag", "--jobs", "2", "--repeat", "3", "--name", "x", "--word", "a"], True, monkeypatch)
    assert built == []
    _parse(["--jobs", " 2"], True, monkeypatch)  # not plainly an int: typer's adapter decides
    assert len(built) == 1
