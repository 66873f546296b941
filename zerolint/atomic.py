"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Used by ``--fix`` (source files) and by the results cache (whose files two zerolint
processes may write at once). ``rewrite_keeping_identity`` is the one for files that are
the user's: it keeps their owner, group, mode and hard links.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def atomic_write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    keep_owner: bool = False,
    follow_symlinks: bool = True,
) -> None:
    """Replace ``path`` with ``data`` atomically, keeping the file's permission bits.

    The bytes go to a temporary file in the same directory, are fsync'ed, then renamed
    over the target (``os.replace``), so a crash or a concurrent writer leaves either the
    old or the new content. A symlink is followed: its target is replaced, the link stays.
    Without ``follow_symlinks``, a symlink at ``path`` is replaced by the new file and its
    target left alone (the results cache's files: a link planted in a checked project must
    not have zerolint write outside it); the folder ``path`` names is the caller's to trust.
    A new file gets the mode a plain ``open(path, "w")`` would give it. With
    ``keep_owner``, the new file gets the old one's owner and group, or ``PermissionError``
    is raised and nothing changes.
    """
    target = Path(os.path.realpath(path) if follow_symlinks else path)
    try:
        old = target.stat() if follow_symlinks else _regular_lstat(target)
    except FileNotFoundError:
        old = None
    mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_current_umask()
    import tempfile  # here: a warm check that writes nothing does not import it

    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
            if keep_owner and old is not None:
                mine = os.fstat(tmp.fileno())
                if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
                    os.fchown(tmp.fileno(), old.st_uid, old.st_gid)  # before chmod: keeps s-bits
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        _remove_quietly(tmp_name)
        raise
    _fsync_directory(target.parent)


def rewrite_keeping_identity(path: str | os.PathLike[str], data: bytes) -> str:
    """Give the existing file ``path`` the content ``data`` and keep everything else it is:
    owner, group, mode, and every hard link to it. Returns how: ``"replaced"`` (atomically,
    see ``atomic_write_bytes``) or ``"in place"``.

    A file with more than one link, or whose owner this process cannot give to a new file,
    or in a folder it cannot write, is overwritten in place: not atomic, which is why
    callers check the new content fully beforehand. The space the new content needs is
    reserved before a byte changes, so a full disk or a file-size limit fails with the
    file as it was; a write that fails after that puts the old bytes back (``_overwrite``).
    The caller decides whether the file may be written at all.
    """
    target = Path(os.path.realpath(path))
    if target.stat().st_nlink == 1:
        try:
            atomic_write_bytes(target, data, keep_owner=True)
            return "replaced"
        except PermissionError:
            pass  # cannot keep the owner, or cannot write the folder: write in place
    fd = os.open(target, os.O_RDWR)
    try:
        old = _read_all(fd)
        _reserve(fd, max(len(old), len(data)))
        try:
            _overwrite(fd, data)
        except BaseException:
            try:
                _overwrite(fd, old)
            except OSError:
                pass  # the error that matters is the first
            raise
    finally:
        os.close(fd)
    return "in place"


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _reserve(fd: int, size: int) -> None:
    """Allocate ``size`` bytes for the file (``posix_fallocate``): ``OSError`` (no space,
    past the file-size limit) before anything is written. Where the file system or the
    platform cannot reserve space, nothing is reserved."""
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is None or size == 0:
        return
    try:
        fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise


def _overwrite(fd: int, data: bytes) -> None:
    """The file's content is ``data``, synced: written from the start, then cut to size
    (a write over the old bytes, not after a truncation that would lose them first)."""
    view = memoryview(data)
    done = 0
    while done < len(data):
        done += os.pwrite(fd, view[done:], done)
    os.ftruncate(fd, len(data))
    os.fsync(fd)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """``atomic_write_bytes`` of ``text`` encoded as given; line endings are written as-is.
    A file name that is not UTF-8 in the text (its bytes held as surrogates, as
    ``os.fsdecode`` gives them) is written as those bytes."""
    atomic_write_bytes(path, text.encode(encoding, "surrogateescape"))


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


def _regular_lstat(path: Path) -> os.stat_result | None:
    """The stat of the regular file at ``path`` itself; None for a link or anything else,
    whose mode is not one to give the file that replaces it."""
    st = path.lstat()
    return st if stat.S_ISREG(st.st_mode) else None
