"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Used by ``--fix`` (source files) and by the results cache (whose files two zerolint
processes may write at once).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping the file's permission bits.

    The bytes go to a temporary file in the same directory, are fsync'ed, then renamed
    over the target (``os.replace``), so a crash or a concurrent writer leaves either the
    old or the new content. A symlink is followed: its target is replaced, the link stays.
    A new file gets the mode a plain ``open(path, "w")`` would give it.
    """
    target = Path(os.path.realpath(path))
    mode = _mode_for(target)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        _remove_quietly(tmp_name)
        raise
    _fsync_directory(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """``atomic_write_bytes`` of ``text`` encoded as given; line endings are written as-is."""
    atomic_write_bytes(path, text.encode(encoding))


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_current_umask()


def _current_umask() -> int:
    # The only portable way to read the umask is to set it and put it back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform lets a directory be opened.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_quietly(name: str) -> None:
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass
