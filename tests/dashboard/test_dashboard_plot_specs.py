"""The page builds its plots from the served plot specification (GET /api/plots): each plot's
title and unit and each trace's plot and line style are the server's: its series' dash, or in
compare mode (the first view's two instances) its joint's dash, its instance's colour and its
series' compare opacity (Debian's Chromium through Playwright, a real server)."""

import pytest

from tests.support.dashboard_server import chromium_page, get_json, wait_for


@pytest.mark.slow
@pytest.mark.browser
def test_page_traces_carry_the_served_styles():
    with chromium_page() as pg:
        spec = get_json(pg.base_url + "/api/plots")
        wait_for(
            lambda: int(pg.get_attribute("#status", "data-frames") or 0) > 0, 60, "live frames"
        )
        series = {s["field"]: s for s in spec["series"]}
        shown = set()  # compare mode or not, as drawn
        for plot in spec["plots"]:
            drawn = pg.evaluate(
                """(div) => { const gd = document.getElementById(div);
                    return {title: gd.layout.title.text, unit: gd.layout.yaxis.title.text,
                            traces: gd.data.filter(t => t.meta && t.meta.field !== "clamped")
                              .map(t => ({field: t.meta.field, dash: t.line.dash,
                                          colour: t.line.color, opacity: t.opacity,
                                          instance: t.meta.instance, joint: t.meta.joint}))}; }""",
                plot["div"],
            )
            assert drawn["title"] == plot["title"] and drawn["unit"] == plot["unit"], plot
            assert drawn["traces"], plot
            compare = any(t["instance"] > 0 for t in drawn["traces"])
            joints = list(dict.fromkeys(t["joint"] for t in drawn["traces"]))
            for t in drawn["traces"]:
                s = series[t["field"]]
                assert s["plot"] == plot["plot"], (plot, t)
                if not compare:
                    assert t["dash"] == s["dash"], (plot, t)
                    continue
                style = spec["compare"]
                assert t["dash"] == style["joint_dashes"][joints.index(t["joint"])], (plot, t)
                assert t["colour"] == style["instance_colours"][t["instance"]], (plot, t)
                assert t["opacity"] == s["compare_opacity"], (plot, t)
            shown.add(compare)
        assert shown == {True}  # the first view compares two instances
        assert not pg.js_errors, pg.js_errors
