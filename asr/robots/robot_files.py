"""The files of a robot folder, checked before anything opens them (asr.robots.robot).

A robot's files (robot.toml, its MJCF files with their <include>s, meshes, textures, height
fields and skins, its SDF files) must be regular files inside the robot's folder after links are
resolved, each at most MAX_BYTES. Anything else is refused with an error naming the file as the
robot gives it (never the server's absolute path) and what it is: a FIFO would block the reader
forever (and with it a server's worker threads), a device or a file outside the folder would be
read on a robot file's say-so, a link loop would read as "not found".

Checks come before MuJoCo, SDFormat or the TOML reader opens a file; reads of checked files open
them non-blocking and check the opened file again (it may have been swapped since).
"""

import errno
import os
import stat
import xml.etree.ElementTree as ET
from collections.abc import Callable

MAX_BYTES = 64 * 1024 * 1024  # a mesh may be large; robot.toml and XML files are far smaller
_ALLOWED = "robot files must be regular files inside the robot's folder"
_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class BadFile(Exception):
    """What is wrong with one file (its name as the robot gives it in the message)."""


def inside(folder: str, path: str) -> bool:
    """True when `path` resolves (links followed) inside `folder`."""
    folder, path = os.path.realpath(folder), os.path.realpath(path)
    return os.path.commonpath([folder, path]) == folder


def _kind(mode: int) -> str:
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def check(folder: str, path: str, name: str) -> str:
    """The resolved path of robot file `path` (named `name` in errors): inside `folder`, a
    regular file of at most MAX_BYTES. FileNotFoundError when there is none; BadFile else."""
    if not inside(folder, path):
        raise BadFile(f"{name!r} is outside the robot's folder; {_ALLOWED}")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"no file {name!r} in the robot's folder") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadFile(f"{name!r} is a symbolic link loop; {_ALLOWED}") from None
        raise BadFile(f"{name!r} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadFile(f"{name!r} is {_kind(st.st_mode)}; {_ALLOWED}")
    if st.st_size > MAX_BYTES:
        raise BadFile(f"{name!r} has {st.st_size} bytes; at most {MAX_BYTES} are read")
    return os.path.realpath(path)


def read(folder: str, path: str, name: str) -> bytes:
    """The bytes of robot file `path`, checked (check()); opened non-blocking and checked again
    once open, so that a file swapped for a FIFO or a device meanwhile is refused, not waited on."""
    real = check(folder, path, name)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise BadFile(f"{name!r} cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise BadFile(f"{name!r} is {_kind(mode)}; {_ALLOWED}")
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise BadFile(f"{name!r} has more than {MAX_BYTES} bytes; at most {MAX_BYTES} are read")
    return data


# ---------------------------------------------------------------- the files an MJCF file names

# <compiler> attributes that set the folder of relative asset paths (MuJoCo: assetdir sets both
# the mesh and the texture folder; meshdir / texturedir override it)
_ASSET_DIRS = ("assetdir", "meshdir", "texturedir")


def _xml(folder: str, path: str, name: str) -> ET.Element:
    try:
        return ET.fromstring(read(folder, path, name))
    except ET.ParseError as exc:
        raise BadFile(f"{name!r} is not well-formed XML: {exc}") from None


def mjcf_files(folder: str, mjcf: str, name: str) -> None:
    """Check an MJCF file and every file it names before MuJoCo opens any: its <include>s
    (recursively; MuJoCo reads them relative to the main file's folder) and every file attribute
    (file, fileright, ... of meshes, textures, height fields, skins, models), relative to each
    folder the <compiler> may set. Each must be a robot file (check()); a path that MuJoCo could
    read outside the folder is refused whether or not it exists. Missing files are left for
    MuJoCo to report; XML that Python's parser refuses is refused (its includes unread)."""
    base = os.path.dirname(mjcf)
    trees, todo, seen = [], [(mjcf, name)], set()
    while todo:
        path, shown = todo.pop()
        if os.path.realpath(path) in seen:
            continue  # MuJoCo reports repeated includes itself
        seen.add(os.path.realpath(path))
        tree = _xml(folder, path, shown)
        trees.append(tree)
        for inc in tree.iter("include"):
            file = inc.get("file", "")
            path = os.path.join(base, file)
            if not inside(folder, path):
                raise BadFile(f"<include> {file!r} is outside the robot's folder; {_ALLOWED}")
            if os.path.lexists(path):  # a missing one: MuJoCo names it
                todo.append((path, file))
    dirs = {""}
    for tree in trees:
        for compiler in tree.iter("compiler"):
            dirs.update(d for a in _ASSET_DIRS if (d := compiler.get(a)))
    for d in dirs:
        if not inside(folder, os.path.join(base, d, "x")):
            raise BadFile(f"<compiler> folder {d!r} is outside the robot's folder; {_ALLOWED}")
    for tree in trees:
        for element in tree.iter():
            if element.tag == "include":
                continue
            for attr, file in element.attrib.items():
                if attr.startswith("file") and file:
                    _asset(folder, [os.path.join(base, d, file) for d in dirs], file)


def _asset(folder: str, candidates: list[str], file: str) -> None:
    """Check the paths an asset file may resolve to: all inside the folder, those that exist
    robot files."""
    for path in candidates:
        if not inside(folder, path):
            raise BadFile(f"{file!r} is outside the robot's folder; {_ALLOWED}")
    for path in candidates:
        if os.path.lexists(path):
            check(folder, path, file)


def sdf_files(folder: str, sdf: str, name: str) -> ET.Element:
    """The parsed SDF file after checking it and the files its <uri>s name: plain paths or
    file:// URIs of robot files (no model:// or network URIs: SDFormat would look them up on
    SDF_PATH or download them)."""
    root = _xml(folder, sdf, name)
    for uri in root.iter("uri"):
        text = (uri.text or "").strip()
        path = text[len("file://") :] if text.startswith("file://") else text
        if "://" in path:
            raise BadFile(
                f"{name!r}: <uri> {text!r}: only files inside the robot's folder "
                "(a relative path) are allowed"
            )
        _asset(folder, [os.path.join(os.path.dirname(sdf), path)], text)
    return root
