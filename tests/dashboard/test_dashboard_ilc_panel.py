"""The ILC panel in Debian's Chromium (dashboard/PROTOCOL.md "ILC"), against a real server: a run
started from the panel, its results downloaded with the panel's button (the errors per iteration
equal to the status'), and a fresh load of the page shows the last run's settings (from the
server: they differ from the page's defaults) and its error curve."""

import io
import json

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
from tests.support.dashboard_server import chromium_page  # noqa: E402

# the run's settings, none of them the page's default (20, 0.5, 10, none, 0.08)
SETTINGS = {"#ilc-iterations": "3", "#ilc-gain": "0.4", "#ilc-decay": "", "#ilc-lowpass": "2"}
SETTINGS["#ilc-tol"] = "0.01"


def ilc_status(pg):
    text = pg.evaluate("async () => await (await fetch('/api/ilc')).text()")
    return json.loads(text)


def wait_finished(pg):
    pg.wait_for_function(
        "() => { const s = document.getElementById('ilc-status');"
        " return s.dataset.running === '0' && s.dataset.verdict !== ''; }",
        timeout=60000,
    )


@pytest.mark.browser
@pytest.mark.slow
def test_ilc_panel_download_and_reload():
    with chromium_page() as pg:
        pg.wait_for_selector("#btn-ilc-download[disabled]")  # no run yet: nothing to download
        for sel, value in SETTINGS.items():
            pg.fill(sel, value)
        pg.click("#btn-ilc-start")
        wait_finished(pg)
        st = ilc_status(pg)
        assert st["verdict"] == "max_iterations" and len(st["errors"]) == 3, st
        assert st["config"]["gain_decay"] is None and st["config"]["lowpass_hz"] == 2.0

        pg.wait_for_selector("#btn-ilc-download:not([disabled])", timeout=10000)
        with pg.expect_download(timeout=60000) as dl:
            pg.click("#btn-ilc-download")
        assert dl.value.suggested_filename == "asr_ilc.npz"
        with open(dl.value.path(), "rb") as f, np.load(io.BytesIO(f.read())) as z:
            np.testing.assert_array_equal(z["trial_errors"], st["errors"])
            assert z["trial_inputs"].shape[0] == 3
            assert json.loads(str(z["settings"]))["gain"] == 0.4

        pg.goto(pg.base_url)  # a fresh load: no form state kept by the browser
        pg.wait_for_function(
            "() => document.getElementById('ilc-iterations').value === '3'", timeout=20000
        )
        shown = {sel: pg.input_value(sel) for sel in SETTINGS}
        assert shown == SETTINGS, shown
        pg.wait_for_function(
            "() => { const p = document.getElementById('plot-ilc');"
            " return p.data && p.data.length > 0 && p.data[0].y.length === 3; }",
            timeout=20000,
        )
        curve = pg.evaluate("() => document.getElementById('plot-ilc').data[0].y")
        np.testing.assert_allclose(curve, st["errors"], rtol=1e-12)
        assert pg.is_enabled("#btn-ilc-download")
        assert pg.text_content("#ilc-status").startswith("stopped at max iterations")
        assert not pg.js_errors, pg.js_errors
