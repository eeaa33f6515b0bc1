"""Write a file so that a failure never leaves it truncated or half-written.

The data goes to a temporary file in the same folder (``.<name>.<random>.tmp``), is
optionally fsync-ed, and is then renamed over the target with ``os.replace`` (atomic on
POSIX and Windows): a reader sees the old file or the new one, never a part. When writing
fails (``[Errno 28] No space left on device``) the temporary file is removed and the old
file, if any, stays as it was.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_path",
    "atomic_write",
    "is_stream",
    "make_parent",
    "write_bytes",
    "write_text",
    "write_with",
]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = False) -> Iterator[Path]:
    """A temporary path next to ``path``: write it in the ``with`` block; at its end it
    replaces ``path`` (after an fsync of the file and its folder with ``fsync``). On an
    error it is removed and ``path`` is untouched."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield tmp
        if fsync:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if fsync and hasattr(os, "O_DIRECTORY"):
        fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str],
    mode: str = "w",
    *,
    fsync: bool = False,
    **open_kwargs: Any,
) -> Iterator[IO[Any]]:
    """``open(path, mode)`` that replaces ``path`` atomically when the block ends."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(path, fsync=fsync) as tmp, open(tmp, mode, **open_kwargs) as fh:
        yield fh
        fh.flush()


def write_text(path: str | os.PathLike[str], text: str, *, fsync: bool = False) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically."""
    with atomic_write(path, "w", fsync=fsync, encoding="utf-8") as fh:
        fh.write(text)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_write(path, "wb", fsync=fsync) as fh:
        fh.write(data)


def write_with(
    path: str | os.PathLike[str], writer: Callable[[Path], Any], *, fsync: bool = False
) -> None:
    """``writer(tmp_path)`` writes the file (e.g. matplotlib's ``savefig``), which then
    replaces ``path`` atomically."""
    with atomic_path(path, fsync=fsync) as tmp:
        writer(tmp)


def is_stream(path: str | os.PathLike[str]) -> bool:
    """``path`` is there (links followed, ``/dev/stdout`` too) and is neither a regular
    file nor a folder: a pipe, a terminal, a device, a socket. Such a path is written as
    it is: a file renamed over it would replace it (``/dev/null`` itself, as root)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def make_parent(path: str | os.PathLike[str]) -> None:
    """Make the folders of ``path``; ``NotADirectoryError`` (not ``FileExistsError``)
    when a file is in the way of one of them."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), exc.filename) from None
