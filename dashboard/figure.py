"""The dashboard's one plotly figure: trace styles and layout, the plotted history decimated to
what a screen shows, `figure` and `extend` message texts, and the thread that builds new
clients' first views.

Size: a first view holds at most `Settings.figure_points` points per trace and at most
`Settings.figure_max_values` numbers of history in all (the shared time axis counted as one
more trace), so its size does not grow with the history window, the number of joints or the
compare instances (PROTOCOL.md, "First view"). The time axis is sent once (`figure.x`), not per
trace. Decimation is min/max per bucket: the history is cut into buckets of equal sample count
(aligned on the newest sample) and each bucket gives two points, its minimum and its maximum in
the order they occurred, placed at the bucket's first and last time. Peaks (a push, a step)
survive; a point moves in time by less than one bucket (a pixel or less). Values are written
with 5 significant digits relative to each trace's largest magnitude, at most 6 decimals.

Cost: message texts are built from NumPy arrays (no per-sample Python loop); a first view is
built outside the runner's lock (only references to the history frames are taken under it)
and outside the event loop, on its own thread, once for all clients that connect meanwhile.
"""

import dataclasses
import json
import math
import threading
import traceback

import numpy as np
from plotly.colors import qualitative

from .plot_specs import PLOTS, SERIES, UNITS, div

# plotted series and plots (dashboard.plot_specs, also served to the page); trace order is
# instance -> joint -> series, so trace (i, k, s) has index (i * n_joints + k) * len(SERIES) + s
FRAME_FIELDS = tuple(s.field for s in SERIES)
# plotly's D3 colours (as the datasheet's figure), lower case as the page has always had them
PALETTE = tuple(c.lower() for c in qualitative.D3)
DASH = {s.field: s.dash for s in SERIES}  # field -> line style
SIGNIFICANT_DIGITS = 5
MAX_DECIMALS = 6


def dumps(msg):
    return json.dumps(msg, separators=(",", ":"), allow_nan=False)


@dataclasses.dataclass(frozen=True)
class View:
    """What the figure's traces and layout depend on (a cache key)."""

    robot: str
    variant: str
    joint_names: tuple
    compare: tuple  # presets of the compare instances, () outside compare mode
    presets: tuple  # (joint, preset) pairs
    run_id: int

    @property
    def n_instances(self):
        return max(1, len(self.compare))

    @property
    def n_traces(self):
        return self.n_instances * len(self.joint_names) * len(SERIES)


def traces(view):
    """[(instance, joint index, field, plot, name)] in trace order."""
    out = []
    for i in range(view.n_instances):
        tag = f"preset {view.compare[i]:g} " if view.compare else ""
        for k, name in enumerate(view.joint_names):
            for s in SERIES:
                out.append((i, k, s.field, s.plot, f"{tag}{name} {s.name}"))
    return out


@dataclasses.dataclass(frozen=True)
class Skeleton:
    """The figure without its data: trace dicts (no x, y) and the layout."""

    data: tuple
    layout: dict


def skeleton(view):
    presets = dict(view.presets)
    data = []
    for i, k, field, plot, name in traces(view):
        joint = view.joint_names[k]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "line": {
                    "color": PALETTE[(i * len(view.joint_names) + k) % len(PALETTE)],
                    "dash": DASH[field],
                    "width": 1.5,
                },
                "meta": {
                    "plot": div(plot),
                    "field": field,
                    "instance": i,
                    "joint": joint,
                    "unit": UNITS[plot],
                    "preset": view.compare[i] if view.compare else presets[joint],
                },
            }
        )
    layout = {
        "uirevision": f"run-{view.run_id}",
        "title": {"text": f"{view.robot} ({view.variant})"},
        "xaxis": {"title": {"text": "t (s)"}},
        "yaxis": {"title": {"text": "rad"}},
        "showlegend": True,
        "margin": {"l": 50, "r": 10, "t": 30, "b": 40},
    }
    return Skeleton(tuple(data), layout)


class SkeletonCache:
    """The skeleton of the last view asked for (built once per configuration change)."""

    def __init__(self):
        self._view, self._skeleton = None, None

    def get(self, view):
        if view != self._view:
            self._view, self._skeleton = view, skeleton(view)
        return self._skeleton


# ---------------------------------------------------------------- history arrays


def history_arrays(frames):
    """{t: (T,), field: (N, T, J)} of a list of frames, or None if empty."""
    if not frames:
        return None
    out = {"t": np.concatenate([f["t"] for f in frames])}
    for field in FRAME_FIELDS:
        out[field] = np.concatenate([f[field] for f in frames], axis=1)
    return out


def points_per_trace(n_traces, settings):
    """History points per trace of a first view: figure_points, fewer when figure_max_values
    would be passed (the shared time axis counts as one more trace); even (min/max pairs)."""
    p = min(settings.figure_points, settings.figure_max_values // (n_traces + 1))
    return max(2, p - p % 2)


def bucket_size(T, points):
    """Samples per bucket so that T samples give at most `points` (two per bucket)."""
    return 1 if T <= points else int(math.ceil(T / (points // 2)))


def _buckets(a, b, axis):
    """a with its time axis cut into buckets of b samples (a new axis after it), padded at the
    start with the first sample so that the last bucket ends on the newest sample."""
    pad = (-a.shape[axis]) % b
    if pad:
        first = np.take(a, [0], axis=axis)
        a = np.concatenate([np.repeat(first, pad, axis=axis), a], axis=axis)
    shape = a.shape[:axis] + (a.shape[axis] // b, b) + a.shape[axis + 1 :]
    return a.reshape(shape)


def decimate_time(t, b):
    """(2 B,) times of the decimated series: each bucket's first and last time."""
    if b == 1:
        return t
    tb = _buckets(t, b, 0)
    return np.stack([tb[:, 0], tb[:, -1]], axis=1).reshape(-1)


def decimate_values(y, b):
    """(N, T, J) -> (N, 2 B, J): per bucket its minimum and maximum, in the order they
    occurred (a NaN in a bucket is kept, so a gap stays a gap)."""
    if b == 1:
        return y
    yb = _buckets(y, b, 1)  # (N, B, b, J)
    i_lo, i_hi = yb.argmin(axis=2), yb.argmax(axis=2)  # (N, B, J)
    lo = np.take_along_axis(yb, i_lo[:, :, None], axis=2)[:, :, 0]
    hi = np.take_along_axis(yb, i_hi[:, :, None], axis=2)[:, :, 0]
    lo_first = i_lo <= i_hi
    pair = np.stack([np.where(lo_first, lo, hi), np.where(lo_first, hi, lo)], axis=2)
    return pair.reshape(y.shape[0], -1, y.shape[2])


def trace_rows(fields):
    """{field: (N, T, J)} -> (N * J * len(SERIES), T) in trace order."""
    stacked = np.stack([fields[f] for f in FRAME_FIELDS], axis=-1)  # (N, T, J, S)
    n, T = stacked.shape[:2]
    return stacked.transpose(0, 2, 3, 1).reshape(-1, T)


def decimated_history(frames, points):
    """(x (P,), rows (traces, P)) of the history frames, P <= points, or None if empty. Done
    field by field, so the full-resolution history is never copied whole."""
    if not frames:
        return None
    t = np.concatenate([f["t"] for f in frames])
    b = bucket_size(t.size, points)
    fields = {
        field: decimate_values(np.concatenate([f[field] for f in frames], axis=1), b)
        for field in FRAME_FIELDS
    }
    return decimate_time(t, b), trace_rows(fields)


# ---------------------------------------------------------------- numbers for JSON


def _lists(a):
    """Rows of a 2-D array as lists (NaN/inf -> None)."""
    rows = a.tolist()
    finite = np.isfinite(a).all(axis=1)
    if not finite.all():
        for r in np.flatnonzero(~finite):
            rows[r] = [v if math.isfinite(v) else None for v in rows[r]]
    return rows


def rounded_rows(rows, digits=SIGNIFICANT_DIGITS, max_decimals=MAX_DECIMALS):
    """Rows as lists of floats with `digits` significant digits relative to each row's
    largest finite magnitude, and at most `max_decimals` decimals (keeps messages small; a
    plot shows about 3 digits)."""
    rows = np.asarray(rows, dtype=float)
    if rows.size == 0:
        return [[] for _ in range(rows.shape[0])]
    mag = np.max(np.where(np.isfinite(rows), np.abs(rows), 0.0), axis=1)
    dec = np.clip(digits - 1 - np.floor(np.log10(np.maximum(mag, 1e-300))), 0, max_decimals)
    scale = (10.0**dec)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        return _lists(np.round(rows * scale) / scale)


def rounded_times(t):
    return _lists(np.round(np.asarray(t, dtype=float), MAX_DECIMALS)[None, :])[0]


# ---------------------------------------------------------------- messages


def figure_text(skel, history, state_text):
    """The `figure` message: trace styles with their history `y`, the shared time axis
    `figure.x`, the layout, and the state (already JSON)."""
    x, ys = (
        ([], [[] for _ in skel.data])
        if history is None
        else (rounded_times(history[0]), rounded_rows(history[1]))
    )
    data = [dict(trace, y=y) for trace, y in zip(skel.data, ys)]
    figure = dumps({"data": data, "layout": skel.layout, "x": x})
    return f'{{"type":"figure","figure":{figure},"state":{state_text}}}'


def extend_message(frame, n_traces):
    """The `extend` message body of one frame ({t: (T,), field: (N, T, J)})."""
    x = rounded_times(frame["t"])
    return {
        "type": "extend",
        "indices": list(range(n_traces)),
        "update": {"x": [x] * n_traces, "y": rounded_rows(trace_rows(frame))},
    }


PLOT_GAP = 0.03  # vertical gap between the subplots of an exported figure, figure fraction


def has_motor(field, motors):
    """False for th1 / th2 of a motor the joint lacks (`motors`: its motor count): a flat line."""
    return {"th1": motors >= 1, "th2": motors >= 2}.get(field, True)


def _subplot_axes(title_text):
    """Layout of len(PLOTS) stacked subplots sharing the time axis (the bottom one titled), each
    y axis titled with its plot's unit."""
    n = len(PLOTS)
    height = (1.0 - PLOT_GAP * (n - 1)) / n
    layout = {
        "title": {"text": title_text},
        "height": 220 * n,
        "hovermode": "x",
        "margin": {"l": 60, "r": 10, "t": 60, "b": 40},
        "showlegend": True,
    }
    for r, plot in enumerate(PLOTS, start=1):
        top = 1.0 - (r - 1) * (height + PLOT_GAP)
        suffix = "" if r == 1 else str(r)
        xaxis = {"anchor": f"y{suffix}", "showticklabels": r == n}
        if r > 1:
            xaxis["matches"] = "x"  # one time axis: zooming one subplot zooms all
        if r == n:
            xaxis["title"] = {"text": "t (s)"}
        layout[f"xaxis{suffix}"] = xaxis
        layout[f"yaxis{suffix}"] = {
            "anchor": f"x{suffix}",
            "domain": [top - height, top],
            "title": {"text": f"{plot.title} ({plot.unit})", "font": {"size": 11}},
        }
    return layout


def export_figure(skel, history, motors):
    """A plotly figure dict of the decimated history (`history`: (x (P,) s, rows (traces, P))
    or None) as the page shows it: one subplot per quantity sharing the time axis, each y axis
    titled with its unit; numbers rounded as in the messages; motor traces of motors a joint
    lacks (`motors`: {joint: motor count}) left out."""
    x, rows = (
        ([], [[] for _ in skel.data])
        if history is None
        else (rounded_times(history[0]), rounded_rows(history[1]))
    )
    row_of = {plot.div: r for r, plot in enumerate(PLOTS, start=1)}
    data = []
    for trace, y in zip(skel.data, rows):
        meta = trace["meta"]
        if not has_motor(meta["field"], motors.get(meta["joint"], 2)):
            continue
        r = row_of[meta["plot"]]
        axis = "" if r == 1 else str(r)
        data.append(
            dict(trace, x=x, y=y, xaxis=f"x{axis}", yaxis=f"y{axis}", legendgroup=meta["joint"])
        )
    return {"data": data, "layout": _subplot_axes(skel.layout["title"]["text"])}


# ---------------------------------------------------------------- first views


@dataclasses.dataclass
class Snapshot:
    """What a first view needs, taken under the runner's lock: references to the history
    frames (never modified once appended), the skeleton and the state's JSON text."""

    frames: list
    skeleton: Skeleton
    state_text: str


def build_first_view(snap, settings):
    points = points_per_trace(len(snap.skeleton.data), settings)
    return figure_text(snap.skeleton, decimated_history(snap.frames, points), snap.state_text)


FIRST_VIEW_RETRY_S = 0.1  # s, the wait before a first view whose snapshot raised is tried again


class FirstViews:
    """New clients' first `figure` messages, built on a thread of their own: clients that
    connect while one is being built share the next one (one snapshot, one text). `take(subs)`
    is called with the waiting subscribers; under the runner's lock it registers those still
    open (from then on they get every frame) and returns their Snapshot. Without a running
    thread (a runner that is not started) the view is built at once."""

    def __init__(self, take, settings):
        self._take, self._settings = take, settings
        self._cond = threading.Condition()
        self._waiting = []
        self._thread = None
        self._stop = False
        self.built = 0  # first-view texts built (for the tests)
        self.failed = 0  # snapshots or sends that raised and were tried again (for the tests)

    def start(self):
        with self._cond:
            if self._thread is not None:
                return
            self._stop = False
            self._thread = threading.Thread(
                target=self._run, name="asr-dashboard-figure", daemon=True
            )
            self._thread.start()

    def stop(self, timeout=5.0):
        with self._cond:
            thread, self._thread, self._stop = self._thread, None, True
            self._cond.notify_all()
        if thread is not None:
            thread.join(timeout)

    def request(self, sub):
        with self._cond:
            if self._thread is not None:
                self._waiting.append(sub)
                self._cond.notify()
                return
        self._serve([sub])

    def _run(self):
        while True:
            with self._cond:
                while not self._waiting and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                subs, self._waiting = self._waiting, []
            try:
                self._serve(subs)
            except Exception:  # noqa: BLE001 - the thread outlives one failed snapshot
                # (a configuration change racing the take): its clients wait for the next try,
                # FIRST_VIEW_RETRY_S later, with clients that came meanwhile; a dead thread
                # would leave every later client waiting for a first view forever
                traceback.print_exc()
                with self._cond:
                    self._waiting[:0] = subs
                    self.failed += 1
                    self._cond.wait(FIRST_VIEW_RETRY_S)

    def _serve(self, subs):
        snap, subs = self._take(subs)
        if not subs:
            return
        try:
            text = build_first_view(snap, self._settings)
        except Exception:  # noqa: BLE001 - a history that cannot be drawn: the view without it
            traceback.print_exc()
            text = figure_text(snap.skeleton, None, snap.state_text)
        self.built += 1
        for sub in subs:
            sub.put_first_threadsafe(text)
