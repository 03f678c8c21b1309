"""The live plots stay readable (issue 46): compare mode gives each instance one colour (distinct
for 16 instances), each joint one dash style and each instance a legend group (the page's HTML
legend: a click on a group's title hides the instance, on an entry its trace); the deflection
clamp is a shaded band per joint (contiguous frames one interval), not a marker per sample; in a
torque mode #plot-defl (no q - eq there) is hidden with a note, its stale band dropped. Debian's
Chromium through Playwright on a real server; the assertions read the page's Plotly data. Waits
are polls on what the page shows, with generous deadlines; nothing is paced by the wall clock."""

import itertools
import math

import pytest

from asr_dashboard import plot_specs
from tests.support.dashboard_server import (
    SIM_DEADLINE_S,
    chromium_page,
    get_json,
    page_api,
    wait_for,
)

N_COMPARE = 16
# OKLab distance two instance colours keep at least: 5 just-noticeable differences (about 0.02
# each in OKLab); plotly's D3 palette, which compare used, repeats at 11 colours
MIN_OKLAB_DISTANCE = 0.1


def srgb_to_oklab(hex_colour):
    """OKLab (L, a, b) of "#rrggbb": the sRGB decoding curve, then Ottosson's (2020) published
    linear sRGB -> LMS -> OKLab matrices (the direction plot_specs does not use)."""
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    lms = [
        0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b,
        0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b,
        0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b,
    ]
    l_, m_, s_ = [math.copysign(abs(v) ** (1 / 3), v) for v in lms]
    return (
        0.2104542553 * l_ + 0.7936177850 * m_ - 0.0040720468 * s_,
        1.9779984951 * l_ - 2.4285922050 * m_ + 0.4505937099 * s_,
        0.0259040371 * l_ + 0.7827717662 * m_ - 0.8086757660 * s_,
    )


def min_distance(colours):
    labs = [srgb_to_oklab(c) for c in colours]
    return min(math.dist(p, q) for p, q in itertools.combinations(labs, 2))


def test_instance_colours_are_far_apart_in_oklab():
    """The served colours, read back to OKLab independently: the first 16 (and every prefix of
    them: 2 instances, 3, ...) at least MIN_OKLAB_DISTANCE apart; bad input named."""
    colours = plot_specs.spec()["compare"]["instance_colours"]
    assert len(colours) == 64 and all(len(c) == 7 and c[0] == "#" for c in colours)
    nearest = [min_distance(colours[:n]) for n in range(2, N_COMPARE + 1)]
    print(f"nearest instance colours (OKLab) among the first n = 2..16: {nearest}")
    assert min(nearest) >= MIN_OKLAB_DISTANCE
    assert colours[:N_COMPARE] == plot_specs.instance_colours(N_COMPARE)  # n-independent
    with pytest.raises(ValueError, match=r"n: got -1; an int >= 0"):
        plot_specs.instance_colours(-1)


# ---------------------------------------------------------------- in the browser

# per live plot: its traces' {plot, field, joint, instance, colour, dash, opacity, group, title,
# n (points), visible, mode, fill, yaxis, shape, x, y (the clamp bands only)}
TRACES = """() => ['plot-q', 'plot-defl', 'plot-tau', 'plot-stiffness', 'plot-motors'].flatMap(id =>
    (document.getElementById(id).data || []).map(t => ({
        plot: id, field: t.meta && t.meta.field, joint: t.meta && t.meta.joint,
        instance: t.meta && t.meta.instance, colour: t.line && t.line.color,
        dash: t.line && t.line.dash, opacity: t.opacity, group: t.legendgroup,
        title: t.legendgrouptitle && t.legendgrouptitle.text, n: (t.x || []).length,
        visible: t.visible, mode: t.mode, fill: t.fill, yaxis: t.yaxis,
        shape: t.line && t.line.shape,
        x: t.meta && t.meta.field === 'clamped' ? Array.from(t.x || []) : null,
        y: t.meta && t.meta.field === 'clamped' ? Array.from(t.y || []) : null})))"""


# the instances of #`plot` whose every trace is hidden from the legend ('legendonly'), and
# whether any other trace is
HIDDEN_INSTANCES = """(plot) => {
    const by = {};
    for (const t of document.getElementById(plot).data)
        if (t.meta && t.meta.instance !== undefined && t.meta.field !== 'clamped')
            (by[t.meta.instance] ||= []).push(t.visible === 'legendonly');
    return Object.entries(by).filter(([, v]) => v.some(Boolean))
        .map(([i, v]) => [+i, v.every(Boolean)]);
}"""


def traces(pg):
    return pg.evaluate(TRACES)


def intervals(x, y):
    """[(t0, t1, frames)] of a band trace: the runs of y == 1 points, each from the x of the
    point before it (the opening y 0) to its last, and how many frames (y 1 points) it holds."""
    out, start, count = [], None, 0
    for k, (t, v) in enumerate(zip(x, y)):
        if v == 1:
            if start is None:
                start, count = (x[k - 1] if k else t), 0
            count += 1
            end = t
        elif start is not None:
            out.append((start, end, count))
            start = None
    if start is not None:
        out.append((start, end, count))
    return out


@pytest.mark.slow
@pytest.mark.browser
def test_compare_of_16_gives_each_instance_a_colour_each_joint_a_dash():
    with chromium_page(n_compare_max=N_COMPARE) as pg:
        url = pg.base_url
        pg.wait_for_selector("#status.live", timeout=60000)
        span = get_json(url + "/api/state")["joints"][0]["preset_range"]
        lo, hi = span["lo"], span["hi"]
        presets = [round(lo + (hi - lo) * (i + 1) / (N_COMPARE + 1), 4) for i in range(N_COMPARE)]
        status, body = page_api(pg, "POST", "/api/compare", {"presets": presets})
        assert status == 200, body
        drawn = wait_for(
            lambda: (
                (ts := [t for t in traces(pg) if t["field"] != "clamped"])
                and len({t["instance"] for t in ts}) == N_COMPARE
                and ts
            ),
            SIM_DEADLINE_S,
            "the compare figure of 16 instances",
        )
        # the HTML legend (static/legend.js): a click on the first group's title (instance 0)
        # hides every trace of that instance, none of another; then a click on an entry of the
        # second group (instance 1: joint1's q) hides that trace alone
        pg.locator("#plot-q .plot-legend .group-title").first.click()
        hidden = wait_for(
            lambda: pg.evaluate(HIDDEN_INSTANCES, "plot-q"), 10, "a legend group hidden"
        )
        pg.locator("#plot-q .plot-legend .entry[data-group='instance-1']").first.click()
        one = wait_for(
            lambda: (h := pg.evaluate(HIDDEN_INSTANCES, "plot-q")) and len(h) == 2 and h,
            10,
            "a legend entry hidden",
        )
        off = pg.eval_on_selector_all("#plot-q .plot-legend .off", "els => els.length")
        js_errors = list(pg.js_errors)

    by_instance, by_joint = {}, {}
    for t in drawn:
        by_instance.setdefault(t["instance"], []).append(t)
        by_joint.setdefault(t["joint"], []).append(t)
    colours = {i: {t["colour"] for t in ts} for i, ts in sorted(by_instance.items())}
    print(f"{len(drawn)} traces; colour per instance {colours}")
    # one colour per instance, on every plot and series; 16 colours far apart
    assert all(len(c) == 1 for c in colours.values()), colours
    palette = [next(iter(c)) for c in colours.values()]
    assert len(set(palette)) == N_COMPARE
    assert min_distance(palette) >= MIN_OKLAB_DISTANCE
    # one dash style per joint, the same in every instance; the joints' differ
    dashes = {j: {t["dash"] for t in ts} for j, ts in by_joint.items()}
    assert all(len(d) == 1 for d in dashes.values()), dashes
    assert len({next(iter(d)) for d in dashes.values()}) == len(dashes) == 2
    # q and eq of one instance and joint share colour and dash: eq (and th2) is the faded one
    for t in drawn:
        want = 0.45 if t["field"] in ("eq", "th2") else 1.0
        assert t["opacity"] == pytest.approx(want), t
    # one legend group per instance, titled by its preset
    for i, ts in by_instance.items():
        assert {t["group"] for t in ts} == {f"instance-{i}"}
        assert {t["title"] for t in ts} == {f"preset {presets[i]:g}"}
    assert hidden == [[0, True]], hidden  # instance 0 hidden, all its traces; no other
    assert one == [[0, True], [1, False]], one  # then one trace of instance 1 alone
    # marked off in the legend: instance 0's title and its entries (its q and eq of 2 joints),
    # instance 1's entry
    assert off == 1 + 4 + 1, off
    assert not js_errors, js_errors


CLAMP_POINTS = 30  # points of the clamp traces waited for: about 1 s of frames on the clamp


def clamp_joint1(pg):
    """The default arm (vertical) with both joints stiff and joint1 held at 0 (horizontal): its
    spring 1 carries the arm's weight on its deflection clamp (tests/dashboard/
    test_dashboard_page.py); returns traces(pg) once the #plot-defl traces of the clamp
    (`meta.field` "clamped", whatever their form) hold CLAMP_POINTS points."""
    url = pg.base_url
    pg.wait_for_selector("#status.live", timeout=60000)
    status, body = page_api(pg, "POST", "/api/stiffness/stiff")  # every joint
    assert status == 200, body
    hold = {"kind": "hold", "amplitude": 0.0, "offset": 0.0}
    status, body = page_api(pg, "POST", "/api/control", {"reference": {"joint1": hold}})
    assert status == 200, body

    def marked():
        ts = traces(pg)
        return sum(t["n"] for t in ts if t["field"] == "clamped") >= CLAMP_POINTS and ts

    return wait_for(marked, SIM_DEADLINE_S, f"the clamp drawn ({url})", every=0.25)


def assert_clamp_bands(ts, axis2, clamped, js_errors):
    """#plot-defl once the arm rests on joint1's clamp (clamp_joint1): one shaded band per joint,
    no marker, contiguous frames merged into intervals."""
    defl = [t for t in ts if t["plot"] == "plot-defl"]
    bands = [t for t in defl if t["field"] == "clamped"]
    runs = {t["joint"]: intervals(t["x"], t["y"]) for t in bands}
    print(f"bands {[(t['joint'], t['n']) for t in bands]}; intervals {runs}; clamped {clamped}")
    assert "joint1" in clamped
    # no marker anywhere on #plot-defl: one band trace per joint
    assert not [t for t in defl if "markers" in (t["mode"] or "")], defl
    assert sorted(t["joint"] for t in bands) == ["joint1", "joint2"]
    for t in bands:  # a step line filled to 0 on the hidden 0 .. 1 axis: the full height
        assert (t["fill"], t["yaxis"], t["shape"], t["mode"]) == ("tozeroy", "y2", "vh", "lines")
        assert set(t["y"]) <= {0, 1}
    assert axis2["range"] == [0, 1] and axis2["overlaying"] == "y" and axis2["visible"] is False
    # contiguous frames on the clamp merged: joint1's intervals disjoint with a gap between two
    # (a frame on the clamp right after another extends its interval, never opens one at its end)
    ivs = runs["joint1"]
    assert max(c for *_, c in ivs) >= 5
    assert all(t0 < t1 for t0, t1, _ in ivs)
    assert all(a[1] < b[0] for a, b in zip(ivs, ivs[1:]))
    # off the clamp a band gets no points: its y 0 points open or close an interval (one more:
    # a closing point whose interval the window cut)
    for t in bands:
        assert t["y"].count(0) <= 2 * len(runs[t["joint"]]) + 1, t
    assert not js_errors, js_errors


@pytest.mark.slow
@pytest.mark.browser
def test_clamp_is_a_band_per_joint_and_torque_modes_hide_the_deflection_plot():
    """One page for both (a Chromium page and a server cost seconds): the clamp drawn as bands,
    then mode 4 on both joints hides #plot-defl and its stale band, and mode 6 brings it back."""
    with chromium_page() as pg:
        ts = clamp_joint1(pg)
        axis2 = pg.evaluate("() => document.getElementById('plot-defl').layout.yaxis2")
        clamped = pg.get_attribute("#status", "data-clamped")
        assert_clamp_bands(ts, axis2, clamped, list(pg.js_errors))

        both = {"joint1": 4, "joint2": 4}
        status, body = page_api(pg, "POST", "/api/control", {"mode": both})
        assert status == 200, body

        def emptied():
            ts = [t for t in traces(pg) if t["plot"] == "plot-defl"]
            return ts if all(t["visible"] is False or t["n"] == 0 for t in ts) else None

        # the plot hidden, the note in its place, and with them every #plot-defl trace hidden
        # or without a point (the stale clamp markers stayed visible here)
        pg.wait_for_selector("#plot-defl-note", state="visible", timeout=SIM_DEADLINE_S * 1000)
        assert pg.is_hidden("#plot-defl")
        defl = emptied()
        assert defl, traces(pg)
        note = pg.text_content("#plot-defl-note")
        # a few frames later still none: frames in mode 4 add no band
        frames = int(pg.get_attribute("#status", "data-frames"))
        wait_for(
            lambda: int(pg.get_attribute("#status", "data-frames")) > frames + 10,
            SIM_DEADLINE_S,
            "frames in mode 4",
        )
        assert emptied()
        # back to mode 6: the plot again, the note gone
        status, body = page_api(pg, "POST", "/api/control", {"mode": {"joint1": 6, "joint2": 6}})
        assert status == 200, body
        pg.wait_for_selector("#plot-defl", state="visible", timeout=10000)
        assert pg.is_hidden("#plot-defl-note")
        js_errors = list(pg.js_errors)
    print(f"mode 4: {len(defl)} #plot-defl traces, all hidden or empty; note: {note!r}")
    assert "mode 4" in note and "torque" in note
    assert not js_errors, js_errors
