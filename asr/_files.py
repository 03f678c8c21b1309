"""Results files that a crash or a kill never leaves half-written: each is written to a temporary
file in the same folder, flushed to the disk (fsync) and renamed over the old one (atomic on
POSIX: a reader sees the old file or the new one, never a mix), then the folder is synced so
that the rename itself is on the disk. Used by asr.sweep and asr.ilc."""
import contextlib
import hashlib
import os


@contextlib.contextmanager
def atomic_write(path, mode="wb"):
    """`with atomic_write(path) as f:` write f; path is replaced only if the block completes."""
    path = os.fspath(path)
    tmp = path + ".tmp"  # one name: a temporary file left by a kill is overwritten next time
    try:
        with open(tmp, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_file(path):
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
