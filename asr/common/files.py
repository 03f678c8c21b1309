"""Results files that a crash, a kill or a second writer never leaves half-written or mixed.

atomic_write: one file is written to a temporary file of its own (a unique name in the same
folder, so that two writers never share one), flushed to the disk (fsync) and renamed over the
old one (atomic on POSIX: a reader sees the old file or the new one, never a mix; of two writers
the last one wins), then the folder is synced so that the rename itself is on the disk. A writer
holds an flock on its temporary file until it is renamed; a temporary file that no writer holds
(its writer was killed) is removed by the next write to the same path, whatever its age: a
writer that finds its new temporary file removed in the instant between creating and locking
it makes another (no clock involved, so a busy machine changes nothing). Temporary files are
hidden (".<name>.<random>.tmp"); no loader ever reads them.

write_pair / read_pair: a result made of a data file and a JSON manifest. The data file is named
by its content (<stem>.<first 16 hex of its SHA-256><ext>), written first; the manifest, written
last and atomically, names it and holds its SHA-256; only then is the data file the old manifest
named removed. A kill at any moment thus leaves the old manifest with its data file or the new
manifest with its own: loading follows the manifest and gives the old result or the new one.

write_version / current_version: a folder of several files (a training checkpoint) switched as a
whole through one symlink.

read_json / parse_json: a JSON file (or text) read with a bounded nesting depth; every way it
can be malformed (not UTF-8, not JSON, nested too deeply, a number too long for Python, NaN
where it is refused) is a ValueError naming the file.

Used by asr.analysis.sweep, asr.learning.iterative_learning, asr.analysis.identification and
asr.rl.training.
"""

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import tempfile

import numpy as np

# tries at a temporary file that a cleaner does not remove before its writer locks it
TEMPORARY_TRIES = 100
# read_json's default nesting limit: far above any file asr writes (3 to 5 levels), far below
# the interpreter's recursion limit (Python's json recurses once per level)
JSON_MAX_DEPTH = 64


def _sync_folder(folder):
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale(folder, prefix):
    """Remove temporaries of killed writers: named prefix*.tmp and not locked (a live writer
    holds its lock until the rename; one removed before its writer locked it is replaced by
    _locked_temporary)."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        tmp = os.path.join(folder, name)
        try:
            fd = os.open(tmp, os.O_RDONLY)
        except OSError:
            continue  # renamed or removed meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.remove(tmp)
        except OSError:
            pass  # held by a live writer, or already gone
        finally:
            os.close(fd)


def _locked_temporary(folder, prefix):
    """(fd, path) of a new hidden temporary file in folder, flock'ed. A cleaner may remove it
    between its creation and the lock (it looks like a killed writer's then): its link count is
    0 after the lock, and another is made."""
    for _ in range(TEMPORARY_TRIES):
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=folder)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until closed, after the rename: "in use"
        if os.fstat(fd).st_nlink > 0:
            return fd, tmp
        os.close(fd)
    raise OSError(
        errno.EAGAIN, f"{TEMPORARY_TRIES} temporary files removed before they were locked", folder
    )


@contextlib.contextmanager
def atomic_write(path, mode="wb"):
    """`with atomic_write(path) as f:` write f; path is replaced only if the block completes
    (an exception leaves the old file and no temporary file)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    prefix = "." + os.path.basename(path) + "."
    _remove_stale(folder, prefix)
    fd, tmp = _locked_temporary(folder, prefix)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, path)  # still open and locked: a cleaner never takes it meanwhile
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    _sync_folder(folder)


def sha256_file(path):
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def folder_lock(folder):
    """Writers of pairs in one folder take turns, so that one writer's clean-up never removes
    the data file another one's manifest is about to name. Released by the kernel on a kill."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _data_files(folder, base, ext):
    pattern = re.compile(re.escape(base) + r"\.[0-9a-f]{16}" + re.escape(ext) + "$")
    return [n for n in os.listdir(folder) if pattern.match(n)]


def write_pair(manifest, ext, write_data, doc, name_key="arrays", sha_key="arrays_sha256"):
    """Write a data file (write_data(f) into a binary file) and the JSON manifest `manifest`
    (doc plus name_key: the data file's name, sha_key: its SHA-256); see the module docstring.
    Returns (data path, manifest path)."""
    manifest = os.fspath(manifest)
    folder = os.path.dirname(os.path.abspath(manifest))
    base = os.path.basename(os.path.splitext(manifest)[0])
    buf = io.BytesIO()
    write_data(buf)
    data = buf.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    name = f"{base}.{sha[:16]}{ext}"
    doc = dict(doc, **{name_key: name, sha_key: sha})
    old = None
    with folder_lock(folder):
        _remove_stale(folder, "." + base + ".")  # content-named temporaries of killed writers
        with contextlib.suppress(OSError, ValueError, AttributeError):
            with open(manifest, encoding="utf-8") as f:
                old = json.load(f).get(name_key)  # the data file the manifest names now
        with atomic_write(os.path.join(folder, name)) as f:
            f.write(data)
        with atomic_write(manifest, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        # the new manifest is on the disk: the old data file, and those of killed writers
        # (written, never named), are no longer needed
        stale = set(_data_files(folder, base, ext))
        if (
            isinstance(old, str)
            and old.startswith(base + ".")
            and old.endswith(ext)
            and os.path.basename(old) == old
            and old != os.path.basename(manifest)
        ):
            stale.add(old)
        for n in stale - {name}:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, n))
    return os.path.join(folder, name), manifest


def read_pair(manifest, what, name_key="arrays", sha_key="arrays_sha256"):
    """(doc, data bytes) of what write_pair wrote, the data checked against the manifest's
    SHA-256. ValueError, naming the file, for a manifest that is not JSON or a data file that
    is missing or not the one the manifest names. `what` names the result in the errors."""
    manifest = os.fspath(manifest)
    folder = os.path.dirname(os.path.abspath(manifest))
    for attempt in range(3):  # a writer may replace the manifest and remove the data between
        try:
            with open(manifest, encoding="utf-8") as f:
                doc = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"{manifest}: truncated or corrupted ({exc}); it is not an {what} "
                "written by asr: save it afresh or use another path"
            ) from None
        name = doc.get(name_key) if isinstance(doc, dict) else None
        if not isinstance(name, str) or os.path.basename(name) != name:
            return doc, None  # not a pair: the caller says what it is not
        data_path = os.path.join(folder, name)
        try:
            with open(data_path, "rb") as f:
                data = f.read()
            break
        except FileNotFoundError:
            if attempt == 2:
                raise ValueError(
                    f"{data_path}: missing; {manifest} names it: save the {what} "
                    "afresh or use another path"
                ) from None
    if sha_key in doc and hashlib.sha256(data).hexdigest() != doc[sha_key]:
        raise ValueError(
            f"{data_path}: truncated, corrupted or not the file {manifest} was "
            f"saved with (its SHA-256 differs from {sha_key} there): it was not "
            f"written by asr as it is; save the {what} afresh or use another path"
        )
    return doc, data


# _link's temporary: ".<name>.<pid>.link", named by its writer's pid
_LINK_TEMPORARY = re.compile(r"^\..+\.[0-9]+\.link$")


def _link(target, path):
    """Make `path` a symlink to `target`, atomically (a new link renamed over the old entry)."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.link")
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)  # left by a killed writer (the folder lock excludes a live one)
    os.symlink(target, tmp)
    os.replace(tmp, path)


def write_version(folder, items, link="checkpoint"):
    """A set of files that always changes as a whole. items: [(name, writer(f))]: each written
    (synced) into a new hidden folder folder/.<link>-<random>/; then the symlink folder/<link>
    is switched to it (one atomic rename: the old set or the new one, whenever a kill comes);
    then each folder/<name> is made a symlink to <link>/<name> if it is not one yet (for
    readers that open the fixed names); then older versions are removed. Readers resolve the
    link once (current_version) and read every file from that folder."""
    folder = os.fspath(folder)
    prefix = f".{link}-"
    with folder_lock(folder):
        new = tempfile.mkdtemp(prefix=prefix, dir=folder)
        try:
            for name, writer in items:
                with open(os.path.join(new, name), "wb") as f:
                    writer(f)
                    f.flush()
                    os.fsync(f.fileno())
            _sync_folder(new)
            _link(os.path.basename(new), os.path.join(folder, link))
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)
            raise
        for name, _ in items:
            path, target = os.path.join(folder, name), os.path.join(link, name)
            if not (os.path.islink(path) and os.readlink(path) == target):
                _link(target, path)
        for n in os.listdir(folder):  # older versions, and those of killed writers
            if n.startswith(prefix) and n != os.path.basename(new):
                shutil.rmtree(os.path.join(folder, n), ignore_errors=True)
            elif _LINK_TEMPORARY.match(n):  # a killed writer's (the lock excludes a live one)
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(folder, n))
        _sync_folder(folder)


def current_version(folder, link="checkpoint"):
    """The folder holding the current set of files write_version wrote (folder itself for a
    folder written before versions: plain files). ValueError naming the link when it leads
    outside `folder` (inside_folder)."""
    folder = os.fspath(folder)
    path = os.path.join(folder, link)
    return inside_folder(folder, path, path) if os.path.islink(path) else folder


def inside_folder(folder, path, shown):
    """The real path of `path` (every symbolic link on the way resolved), which must lie inside
    `folder`: a folder that links out of itself (to another user's files, a server's secrets)
    is refused with ValueError naming `shown` (the link as the reader names it, never its
    target, which a server must not echo)."""
    root = os.path.realpath(folder)
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root:
        raise ValueError(
            f"{shown}: a symbolic link that leads outside its folder; refused (the links of a "
            "folder asr wrote stay inside it, and a shared folder must not read files "
            "elsewhere on this machine)"
        )
    return real


def _exchange(a, b):
    """Swap two paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where the
    C library or the file system has no such call."""
    rename = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if rename is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if rename(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def replace_folder(new, final):
    """Put the folder `new` at `final`, replacing a folder there: swapped in one atomic step
    where the system allows (a kill leaves the old folder or the new one), else the old one is
    renamed aside first. The old folder is then removed."""
    if not os.path.isdir(final):
        os.replace(new, final)
    elif _exchange(new, final):
        shutil.rmtree(new)  # now the old folder
    else:
        aside = tempfile.mkdtemp(
            prefix="." + os.path.basename(final) + "-old-",
            dir=os.path.dirname(os.path.abspath(final)),
        )
        os.replace(final, os.path.join(aside, "old"))
        os.replace(new, final)
        shutil.rmtree(aside)
    _sync_folder(os.path.dirname(os.path.abspath(final)))


def sha256_arrays(arrays):
    """{name: hex SHA-256 of the array's dtype, shape and bytes}: the checksums a results file
    stores of its own data, so that a file edited or damaged outside asr is told apart."""
    out = {}
    for key, a in arrays.items():
        a = np.ascontiguousarray(a)
        out[key] = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()
    return out


def check_sha256(path, arrays, saved, what):
    """ValueError naming `path` and every array whose checksum differs from `saved` (what
    sha256_arrays gave when the file was written)."""
    if not isinstance(saved, dict):
        raise ValueError(
            f"{path}: no SHA-256 checksums of its data: not an {what} written by "
            "asr; start afresh (delete it) or use another path"
        )
    now = sha256_arrays(arrays)
    bad = sorted(k for k in set(now) | set(saved) if now.get(k) != saved.get(k))
    if bad:
        raise ValueError(
            f"{path}: the SHA-256 of {', '.join(bad)} differs from the one saved "
            f"with it: the file was edited or damaged after asr wrote it, and its "
            f"data cannot be trusted; start afresh (delete it) or use another path"
        )


def _nesting(value):
    """How deeply lists and dicts nest in a parsed JSON value (0: a scalar), counted without
    recursion, so that checking a deep value cannot itself overflow the stack."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in item)
    return deepest


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number (non-finite numbers are written as null)")


def parse_json(data, where, what, max_depth=JSON_MAX_DEPTH, allow_nan=False):
    """The parsed JSON text `data` (str or UTF-8 bytes); `where` names it in the errors (a
    file's path, or "<path>: its meta") and `what` its kind ("an identification result").
    ValueError naming `where` and what is wrong for text that is not UTF-8, not JSON, nested
    more than max_depth levels (also text the parser cannot descend: Python's json recurses
    per level), or holds a number longer than Python parses; NaN, Infinity and -Infinity (not
    JSON, though Python writes them) are refused unless allow_nan. What the value must hold
    is the caller's to check."""
    problem = None
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=None if allow_nan else _refuse_constant)
    except RecursionError:
        problem = f"nested too deeply to parse (limit {max_depth} levels)"
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        problem = f"not valid JSON ({exc})"
    else:
        depth = _nesting(value)
        if depth > max_depth:
            problem = f"nested {depth} levels deep (limit {max_depth} levels)"
    if problem is not None:
        raise ValueError(f"{where}: {problem}; it is not {what} written by asr")
    return value


def read_json(path, what, max_depth=JSON_MAX_DEPTH, allow_nan=False):
    """The parsed JSON file `path`: parse_json of its bytes, errors naming the path. A missing
    or unreadable file raises its OSError (FileNotFoundError, ...) as open() does."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    return parse_json(data, path, what, max_depth, allow_nan)


__all__ = [
    "parse_json",
    "read_json",
    "atomic_write",
    "sha256_file",
    "write_pair",
    "read_pair",
    "sha256_arrays",
    "check_sha256",
    "write_version",
    "current_version",
    "inside_folder",
    "replace_folder",
    "folder_lock",
]
