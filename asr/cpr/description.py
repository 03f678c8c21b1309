"""CPR robot descriptions (robots/cpr/<name>.toml, docs/cpr.md): read, checked, and turned into
the legs (rods with their base and tip joints) and plate that asr.cpr.CPRobot is built from.
Errors name the file and the key."""

import os

import numpy as np

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib


def cpr_dir():
    """Where CPR robot names are looked up: the cpr/ folder of asr.robots.robot.robots_dir()."""
    from asr.robots.robot import robots_dir

    return os.path.join(robots_dir(), "cpr")


BASE_JOINTS = {"revolute": 0, "prismatic": 1, "extensible": 2}
TIP_JOINTS = {"fixed": 0, "revolute": 1, "prismatic": 2, "spherical": 3}


def _fail(path, what):
    raise ValueError(f"{path}: {what}")


def _vec(path, where, value, n=3, unit=False):
    arr = np.asarray(value, dtype=float) if isinstance(value, (list, tuple)) else None
    if arr is None or arr.shape != (n,) or not np.all(np.isfinite(arr)):
        _fail(path, f"{where}: expected a list of {n} finite numbers, got {value!r}")
    if unit:
        nrm = np.linalg.norm(arr)
        if nrm < 1e-12:
            _fail(path, f"{where}: must be a non-zero vector")
        arr = arr / nrm
    return arr


def _num(path, where, value, lo=None, positive=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        _fail(path, f"{where}: expected a finite number, got {value!r}")
    if positive and not value > 0:
        _fail(path, f"{where}: must be > 0, got {value!r}")
    if lo is not None and value < lo:
        _fail(path, f"{where}: must be >= {lo}, got {value!r}")
    return float(value)


def _frame(direction, normal=None):
    """Row-major rod frame whose 3rd column is `direction`; the 1st is `normal` made orthogonal
    (default world z, or world x when the direction is along z)."""
    e3 = direction
    if normal is None:
        normal = np.array([0.0, 0.0, 1.0]) if abs(e3[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = normal - np.dot(normal, e3) * e3
    e1 = e1 / np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(e3, e1), e3])


ROD_KEYS = {"E", "G", "poisson", "r", "rho", "L", "u0", "f_ext"}
LEG_KEYS = ROD_KEYS | {
    "base",
    "base_joint",
    "base_axis",
    "base_direction",
    "base_normal",
    "q",
    "free_twist",
    "tip",
    "tip_joint",
    "tip_axis",
    "tip_direction",
    "tip_normal",
}


def _rod_end(path, where, e, end, leg):
    """A rod end ("base" or "tip"): its point, joint axis and frame (direction of the rod there
    and an optional normal), into leg[end], leg[end + "_axis"], leg[end + "_R"]."""
    leg[end] = _vec(path, f"{where}.{end}", e[end])
    leg[f"{end}_axis"] = _vec(
        path, f"{where}.{end}_axis", e.get(f"{end}_axis", [0, 0, 1]), unit=True
    )
    d = _vec(path, f"{where}.{end}_direction", e.get(f"{end}_direction", [0, 0, 1]), unit=True)
    nrm = e.get(f"{end}_normal")
    leg[f"{end}_R"] = _frame(d, None if nrm is None else _vec(path, f"{where}.{end}_normal", nrm))


def _leg(path, k, entry, defaults, gravity):
    where = f"rods[{k}]"
    if not isinstance(entry, dict):
        _fail(path, f"{where}: expected a table")
    unknown = set(entry) - LEG_KEYS
    if unknown:
        _fail(path, f"{where}: unknown keys {sorted(unknown)}; valid: {sorted(LEG_KEYS)}")
    e = dict(defaults)
    e.update(entry)
    for key in ("E", "r", "base", "tip", "base_joint"):
        if key not in e:
            _fail(path, f"{where}: missing key {key!r} (in the rod or in [rod_defaults])")
    leg = {
        "E": _num(path, f"{where}.E", e["E"], positive=True),
        "r": _num(path, f"{where}.r", e["r"], positive=True),
        "rho": _num(path, f"{where}.rho", e.get("rho", 0.0), lo=0.0),
    }
    if "G" in e:
        leg["G"] = _num(path, f"{where}.G", e["G"], positive=True)
    elif "poisson" in e:
        nu = _num(path, f"{where}.poisson", e["poisson"])
        if not -1.0 < nu < 0.5:
            _fail(path, f"{where}.poisson: must be in (-1, 0.5), got {nu!r}")
        leg["G"] = leg["E"] / (2.0 * (1.0 + nu))
    else:
        _fail(path, f"{where}: missing key 'G' or 'poisson'")
    leg["u0"] = _vec(path, f"{where}.u0", e.get("u0", [0.0, 0.0, 0.0]))
    leg["f_ext"] = _vec(path, f"{where}.f_ext", e.get("f_ext", [0.0, 0.0, 0.0]))
    leg["g"] = gravity
    bj = e["base_joint"]
    if bj not in BASE_JOINTS:
        _fail(path, f"{where}.base_joint: {bj!r} is not one of {sorted(BASE_JOINTS)}")
    leg["base_joint"] = bj
    _rod_end(path, where, e, "base", leg)
    if bj == "extensible":
        if "L" in entry:
            _fail(path, f"{where}: an extensible rod's length is its joint value q, not L")
        leg["L"] = 0.0
        leg["q"] = _num(path, f"{where}.q", e.get("q", 1.0), positive=True)
    else:
        if "L" not in e:
            _fail(path, f"{where}: missing key 'L' (rod length, m)")
        leg["L"] = _num(path, f"{where}.L", e["L"], positive=True)
        leg["q"] = _num(path, f"{where}.q", e.get("q", 0.0))
    tj = e.get("tip_joint", "fixed")
    if tj not in TIP_JOINTS:
        _fail(path, f"{where}.tip_joint: {tj!r} is not one of {sorted(TIP_JOINTS)}")
    leg["tip_joint"] = tj
    _rod_end(path, where, e, "tip", leg)
    ft = e.get("free_twist", False)
    if not isinstance(ft, bool):
        _fail(path, f"{where}.free_twist: expected true or false, got {ft!r}")
    if ft and tj != "fixed":
        _fail(path, f"{where}.free_twist: needs tip_joint = 'fixed', got {tj!r}")
    if ft and np.any(leg["u0"] != 0.0):
        _fail(path, f"{where}.free_twist: needs a straight rod (u0 = 0)")
    leg["free_twist"] = ft
    return leg


def _resolve(name_or_path):
    p = os.fspath(name_or_path)
    if os.sep in p or p.endswith(".toml") or os.path.exists(p):
        return p
    return os.path.join(cpr_dir(), p + ".toml")


def read_description(name_or_path):
    """The arguments of CPRobot (name, legs, plate mass, gravity, wrench, home position and
    rotation vector, path) from robots/cpr/<name>.toml or a path to a .toml file; ValueError
    (naming the file and the key) for a bad description."""
    path = _resolve(name_or_path)
    if not os.path.isfile(path):
        folder = cpr_dir()
        have = (
            sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".toml"))
            if os.path.isdir(folder)
            else []
        )
        raise FileNotFoundError(f"{path}: CPR description not found; known robots: {have}")
    with open(path, "rb") as f:
        try:
            doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: malformed TOML: {exc}") from None
    unknown = set(doc) - {"name", "doc", "plate", "rod_defaults", "rods"}
    if unknown:
        _fail(
            path,
            f"unknown top-level keys {sorted(unknown)}; valid: name, doc, plate, "
            "rod_defaults, rods",
        )
    plate = doc.get("plate", {})
    if not isinstance(plate, dict):
        _fail(path, "plate: expected a table")
    bad = set(plate) - {"mass", "gravity", "wrench", "position", "rotation"}
    if bad:
        _fail(
            path,
            f"plate: unknown keys {sorted(bad)}; valid: mass, gravity, wrench, position, rotation",
        )
    mass = _num(path, "plate.mass", plate.get("mass", 0.0), lo=0.0)
    gravity = _vec(path, "plate.gravity", plate.get("gravity", [0.0, 0.0, 0.0]))
    wrench = _vec(path, "plate.wrench", plate.get("wrench", [0.0] * 6), n=6)
    home = _vec(path, "plate.position", plate.get("position", [0.0, 0.0, 0.0]))
    home_rot = _vec(path, "plate.rotation", plate.get("rotation", [0.0, 0.0, 0.0]))
    defaults = doc.get("rod_defaults", {})
    if not isinstance(defaults, dict) or set(defaults) - ROD_KEYS - LEG_KEYS:
        _fail(path, f"rod_defaults: expected a table with keys among {sorted(LEG_KEYS)}")
    rods = doc.get("rods")
    if not isinstance(rods, list) or not rods:
        _fail(path, "rods: expected at least one [[rods]] table")
    legs = [_leg(path, k, e, defaults, gravity) for k, e in enumerate(rods)]
    nw = sum(5 if l["free_twist"] else 6 for l in legs)
    nres = nw + 6
    if any(l for l in legs) and nw + len(legs) > nres:
        _fail(
            path,
            f"{len(legs)} rods give {nw + len(legs)} IGM unknowns for {nres} equations: "
            "the inverse problem is under-determined",
        )
    name = doc.get("name", os.path.basename(path)[:-5])
    return name, legs, mass, gravity, wrench, home, home_rot, path
