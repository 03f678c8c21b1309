"""The dashboard's plots, in one place: which plot elements the page has (div id, title, unit)
and which series each shows (frame field, name, line style). The server's figure (trace styles,
the exported HTML's subplots) and the page (GET /api/plots, static/plots.js) both read it, so
the two cannot drift apart."""

import dataclasses


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
    Series("eq", "q", "equilibrium eq", "dash"),
    Series("defl", "defl", "deflection", "solid"),
    Series("tau", "tau", "torque", "solid"),
    Series("stiffness", "stiffness", "stiffness", "solid"),
    Series("th1", "motors", "motor 1", "solid"),
    Series("th2", "motors", "motor 2", "dot"),
)

UNITS = {p.key: p.unit for p in PLOTS}  # plot key -> unit of its y axis


def spec():
    """The JSON plot specification GET /api/plots answers (PROTOCOL.md "Plots")."""
    return {
        "plots": [{"plot": p.key, "div": p.div, "title": p.title, "unit": p.unit} for p in PLOTS],
        "series": [dataclasses.asdict(s) for s in SERIES],
    }
