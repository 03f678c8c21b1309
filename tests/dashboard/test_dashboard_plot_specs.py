"""The page builds its plots from the served plot specification (GET /api/plots): each plot's
title and unit and each trace's plot and line style are the server's (Debian's Chromium through
Playwright, a real server)."""

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
        for plot in spec["plots"]:
            drawn = pg.evaluate(
                """(div) => { const gd = document.getElementById(div);
                    return {title: gd.layout.title.text, unit: gd.layout.yaxis.title.text,
                            traces: gd.data.filter(t => t.meta && t.meta.field !== "clamped")
                              .map(t => ({field: t.meta.field, dash: t.line.dash}))}; }""",
                plot["div"],
            )
            assert drawn["title"] == plot["title"] and drawn["unit"] == plot["unit"], plot
            assert drawn["traces"], plot
            for t in drawn["traces"]:
                assert series[t["field"]]["plot"] == plot["plot"], (plot, t)
                assert t["dash"] == series[t["field"]]["dash"], (plot, t)
        assert not pg.js_errors, pg.js_errors
