"""The dashboard's plots, in one place: which plot elements the page has (div id, title, unit)
and which series each shows (frame field, name, line style). The server's figure (trace styles,
the exported HTML's subplots) and the page (GET /api/plots, static/plots.js) both read it, so
the two cannot drift apart.

Compare mode (several instances, one preset each) styles its traces by instance and joint rather
than by series: one colour per instance (`instance_colours`), one dash style per joint
(`JOINT_DASHES`, the same in every instance), and the second series of a plot (eq, th2) faded
(`Series.compare_opacity`) where its own dash style would clash with the joint's."""

import dataclasses
import math

from .references import TORQUE_MODES


def div(key):
    """The element id of plot `key` (also the traces' meta.plot)."""
    return f"plot-{key}"


@dataclasses.dataclass(frozen=True)
class Plot:
    """One plot element of the page: `key` names it in Series.plot, `div` is its element id."""

    key: str
    title: str
    unit: str  # of its y axis

    @property
    def div(self):
        return div(self.key)


@dataclasses.dataclass(frozen=True)
class Series:
    """One plotted quantity per instance and joint: a frame field drawn on plot `plot`."""

    field: str
    plot: str
    name: str
    dash: str  # plotly line style: "solid", "dash", "dot"
    # compare mode: the trace's opacity (its dash is its joint's there, JOINT_DASHES)
    compare_opacity: float = 1.0
    # q - eq and eq: defined only where the joint follows an equilibrium reference, not in the
    # torque modes (TORQUE_MODES), whose inputs are torques
    needs_eq: bool = False


# top to bottom on the page and in an exported figure; each its own y axis in its unit
PLOTS = (
    Plot("q", "link angle q (solid), equilibrium eq (dashed)", "rad"),
    Plot("defl", "deflection q - eq", "rad"),
    Plot("tau", "link torque", "N m"),
    Plot("stiffness", "stiffness", "N m/rad"),
    Plot("motors", "motor angles th1, th2", "rad"),
)

# trace order within a joint (PROTOCOL.md "Figure traces")
SERIES = (
    Series("q", "q", "link angle q", "solid"),
    Series("eq", "q", "equilibrium eq", "dash", compare_opacity=0.45, needs_eq=True),
    Series("defl", "defl", "deflection", "solid", needs_eq=True),
    Series("tau", "tau", "torque", "solid"),
    Series("stiffness", "stiffness", "stiffness", "solid"),
    Series("th1", "motors", "motor 1", "solid"),
    Series("th2", "motors", "motor 2", "dot", compare_opacity=0.45),
)

UNITS = {p.key: p.unit for p in PLOTS}  # plot key -> unit of its y axis

# ---------------------------------------------------------------- compare mode

# one dash style per joint in compare mode, joint k gets JOINT_DASHES[k % 12]: plotly's six
# named styles, then six dash lists (px) unlike them; 12 covers every robot (the snake's 12)
JOINT_DASHES = (
    "solid",
    "dot",
    "dash",
    "longdash",
    "dashdot",
    "longdashdot",
    "2px,7px",
    "20px,4px",
    "9px,3px,3px,3px,3px,3px",
    "15px,3px,3px,3px,3px,3px,3px,3px",
    "4px,4px,12px,4px",
    "24px,6px,6px,6px",
)
# instance colours served: Settings.n_compare_max's upper bound
N_INSTANCE_COLOURS = 64
# instance i's colour in OKLCH (Ottosson's OKLab in polar form, a perceptual space): hue
# HUE0 + i * GOLDEN_ANGLE deg, so each new instance falls in one of the widest hue gaps left and an
# instance keeps its colour whatever the number of instances; lightness cycling through
# LIGHTNESS, so hue neighbours differ in lightness too; chroma CHROMA, less where sRGB cannot
# show it. The nearest two of the first 16 are 0.115 apart in OKLab (about 5 just-noticeable
# differences of 0.02), of the first 8 0.123 (tests/dashboard/test_dashboard_compare_style.py).
HUE0_DEG = 240.0
GOLDEN_ANGLE_DEG = 180.0 * (3.0 - math.sqrt(5.0))  # 137.5 deg
LIGHTNESS = (0.52, 0.74, 0.63)
CHROMA = 0.16
CHROMA_STEP = 0.005  # chroma lowered by this until the colour is in the sRGB gamut


def oklab_to_linear_srgb(lab):
    """Linear sRGB (r, g, b) of an OKLab colour (L, a, b) (Ottosson 2020's published matrices);
    a component outside [0, 1] is out of gamut."""
    lightness, a, b = lab
    lms = (
        (lightness + 0.3963377774 * a + 0.2158037573 * b) ** 3,
        (lightness - 0.1055613458 * a - 0.0638541728 * b) ** 3,
        (lightness - 0.0894841775 * a - 1.2914855480 * b) ** 3,
    )
    rows = (
        (4.0767416621, -3.3077115913, 0.2309699292),
        (-1.2684380046, 2.6097574011, -0.3413193965),
        (-0.0041960863, -0.7034186147, 1.7076147010),
    )
    return tuple(sum(c * v for c, v in zip(row, lms)) for row in rows)


def instance_lab(i):
    """The OKLab colour (L, a, b) of compare instance `i` (an int >= 0), in the sRGB gamut."""
    if not isinstance(i, int) or i < 0:
        raise ValueError(f"instance: got {i!r}; an int >= 0")
    lightness = LIGHTNESS[i % len(LIGHTNESS)]
    hue = math.radians(HUE0_DEG + i * GOLDEN_ANGLE_DEG)
    chroma = CHROMA
    while True:
        lab = (lightness, chroma * math.cos(hue), chroma * math.sin(hue))
        if all(-1e-9 <= v <= 1 + 1e-9 for v in oklab_to_linear_srgb(lab)) or chroma <= 0:
            return lab
        chroma = max(0.0, chroma - CHROMA_STEP)


def srgb_hex(lab):
    """ "#rrggbb" of an OKLab colour (L, a, b) in the sRGB gamut (the sRGB transfer curve)."""

    def encode(v):
        v = min(1.0, max(0.0, v))
        v = 12.92 * v if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055
        return round(255 * v)

    return "#" + "".join(f"{encode(v):02x}" for v in oklab_to_linear_srgb(lab))


def instance_colours(n):
    """The line colours ("#rrggbb") of compare instances 0 .. n-1 (n an int >= 0)."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n: got {n!r}; an int >= 0")
    return [srgb_hex(instance_lab(i)) for i in range(n)]


def spec():
    """The JSON plot specification GET /api/plots answers (PROTOCOL.md "Plots")."""
    return {
        "plots": [{"plot": p.key, "div": p.div, "title": p.title, "unit": p.unit} for p in PLOTS],
        "series": [dataclasses.asdict(s) for s in SERIES],
        "compare": {
            "instance_colours": instance_colours(N_INSTANCE_COLOURS),
            "joint_dashes": list(JOINT_DASHES),
        },
        "torque_modes": list(TORQUE_MODES),
    }
