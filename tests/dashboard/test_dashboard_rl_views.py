"""The RL and ILC panels' feedback in Debian's Chromium, against a real server and real `asr
train` processes (dashboard/PROTOCOL.md "RL", "Page"): a double click on RL or ILC start sends one
request and shows no error (the button is disabled while its request is in flight); Watch shows
that it loads (button text, aria-busy, #rl-watch-status) until the first frame of the watched run
has come, and its error when it fails; the run overlay gives each metric (name and unit) an axis
of its own, so a Reach run's joint error (rad) and a Throw run's distance (m) never share one;
the curves shown download as CSV, equal to the server's curves."""

import csv
import io

import pytest

from tests.conftest import require

require("fastapi")
from tests.support.dashboard_server import chromium_page, page_api  # noqa: E402

# the smallest trainings the server takes with a metric to draw: one PPO update each
REACH = {"#rl-num-envs": "2", "#rl-n-steps": "8", "#rl-batch-size": "16", "#rl-total-steps": "16"}
THROW = {"#rl-num-envs": "2", "#rl-n-steps": "8", "#rl-batch-size": "16", "#rl-total-steps": "16"}

# records, in the page, every time #error is shown and every aria-busy / disabled change of the
# buttons named: window.asrTest = {errors: [text], buttons: {id: [[aria-busy, disabled]]}}
RECORD = """(ids) => {
  const rec = window.asrTest = { errors: [], buttons: {} };
  const box = document.getElementById('error');
  new MutationObserver(() => { if (!box.hidden) rec.errors.push(box.textContent.trim()); })
    .observe(box, { attributes: true, attributeFilter: ['hidden'] });
  for (const id of ids) {
    const b = document.getElementById(id), log = rec.buttons[id] = [];
    new MutationObserver(() => log.push([b.getAttribute('aria-busy'), b.disabled]))
      .observe(b, { attributes: true, attributeFilter: ['aria-busy', 'disabled'] });
  }
}"""


def requests_to(pg, path):
    """The POSTs the page sends to `path`, recorded from now on (a list that grows)."""
    sent = []
    pg.on(
        "request",
        lambda r: sent.append(r.url) if r.method == "POST" and r.url.endswith(path) else None,
    )
    return sent


def rl_finished(pg, run, timeout_s=120):
    pg.wait_for_function(
        """(run) => { const s = document.getElementById('rl-status');
            return s.dataset.running === '0'
                && s.textContent.startsWith(`run ${run}: finished`); }""",
        arg=run,
        timeout=timeout_s * 1000,
    )


def fill(pg, task, fields):
    pg.select_option("#rl-task", task)
    for sel, value in fields.items():
        pg.fill(sel, value)


def assert_sent_once(pg, button, sent):
    """One request sent, the button busy and disabled while it was in flight, then free again;
    no error shown."""
    rec = pg.evaluate("() => window.asrTest")
    assert len(sent) == 1, sent
    assert not rec["errors"], rec["errors"]
    log = rec["buttons"][button]
    assert log and log[0] == ["true", True], log  # busy and disabled from the click
    assert log[-1][0] is None, log  # no longer busy once the answer came


def ilc_double_click_and_a_failed_watch(pg):
    """ILC start double-clicked: one request, no error; Watch before any training (a page whose
    can_watch is stale): the server's 404 in the watch line, the button back disabled."""
    pg.wait_for_selector("#status.live", timeout=60000)
    pg.evaluate(RECORD, ["btn-ilc-start", "btn-rl-watch"])
    sent = requests_to(pg, "/api/ilc/start")
    pg.fill("#ilc-iterations", "2")
    pg.dblclick("#btn-ilc-start")
    pg.wait_for_function(
        "() => { const s = document.getElementById('ilc-status');"
        " return s.dataset.running === '0' && s.dataset.verdict !== ''; }",
        timeout=60000,
    )
    assert_sent_once(pg, "btn-ilc-start", sent)
    assert pg.is_enabled("#btn-ilc-start")  # the run ended: the server's status says so

    # Watch before any training (a page whose can_watch is stale): the server's 404 is
    # shown in the watch line and the button comes back disabled, as the status says
    pg.wait_for_function("() => document.getElementById('btn-rl-watch').disabled")
    pg.evaluate("() => { document.getElementById('btn-rl-watch').disabled = false; }")
    pg.click("#btn-rl-watch")
    pg.wait_for_selector("#rl-watch-status[data-state='error']", timeout=30000)
    line = pg.text_content("#rl-watch-status")
    assert line.startswith("watch failed: 404") and "no checkpoint yet" in line, line
    assert pg.is_visible("#rl-watch-status")
    assert pg.get_attribute("#btn-rl-watch", "aria-busy") is None
    assert pg.text_content("#btn-rl-watch") == "watch" and pg.is_disabled("#btn-rl-watch")
    assert not pg.js_errors, pg.js_errors


@pytest.mark.slow
@pytest.mark.browser
def test_ilc_and_rl_double_clicks_overlay_csv_and_watch_loading():
    """One page (a server and Chromium cost seconds to start): the ILC checks first, before any
    training (the failed Watch needs none), then the RL ones."""
    require("stable_baselines3")
    with chromium_page() as pg:
        ilc_double_click_and_a_failed_watch(pg)
        pg.wait_for_function(
            "() => document.querySelectorAll('#rl-task option').length > 0", timeout=30000
        )
        pg.evaluate(RECORD, ["btn-rl-start"])
        sent = requests_to(pg, "/api/rl/start")
        fill(pg, "asr/Reach2DOF-v0", REACH)
        pg.dblclick("#btn-rl-start")
        rl_finished(pg, 1)
        assert_sent_once(pg, "btn-rl-start", sent)
        fill(pg, "asr/Throw-v0", THROW)
        pg.click("#btn-rl-start")
        rl_finished(pg, 2)

        # run 1 (Reach: joint error, rad) overlaid on run 2 (Throw: distance, m)
        pg.wait_for_selector("#rl-runs tbody tr[data-run='1'] input", timeout=20000)
        pg.check("#rl-runs tr[data-run='1'] input")
        pg.wait_for_function(
            "() => document.getElementById('plot-rl').data.some(t => t.meta.run === 1)",
            timeout=10000,
        )
        runs = page_api(pg, "GET", "/api/rl/runs")[1]["runs"]
        assert [r["run"] for r in runs] == [1, 2]
        metric = {r["run"]: r["metric"] for r in runs}
        assert metric[1]["unit"] == "rad" and metric[2] == {
            "name": "distance thrown",
            "unit": "m",
            "better": "higher",
        }
        drawn = pg.evaluate(
            """() => { const p = document.getElementById('plot-rl');
                return { layout: JSON.parse(JSON.stringify(p.layout)),
                         traces: p.data.filter(t => t.meta.series === 'metric')
                                       .map(t => ({ run: t.meta.run, axis: t.yaxis })) }; }"""
        )
        axis = {t["run"]: t["axis"] for t in drawn["traces"]}
        assert set(axis) == {1, 2} and axis[1] != axis[2], axis
        layout = drawn["layout"]
        for run in (1, 2):
            name = "yaxis" + axis[run][1:]
            title = layout[name]["title"]["text"]
            assert title == f"{metric[run]['name']} ({metric[run]['unit']})", (run, layout[name])
        assert axis[2] == "y2"  # the current run's metric: the first axis, right of the plot
        second = layout["yaxis" + axis[1][1:]]
        assert second["anchor"] == "free" and second["position"] > layout["xaxis"]["domain"][1]

        # the curves shown as CSV: every run's return and metric, as the server has them
        with pg.expect_download(timeout=20000) as dl:
            pg.click("#btn-rl-csv")
        assert dl.value.suggested_filename == "asr_rl_curves.csv"
        with open(dl.value.path(), newline="") as f:
            rows = list(csv.reader(io.StringIO(f.read())))
        assert rows[0] == ["run", "task", "metric", "unit", "env_steps", "value"]
        want = []
        for r in runs:
            curve, m = r["curve"], r["metric"]
            for name, unit, ys in (
                ("return", "", curve["return"]),
                (m["name"], m["unit"], curve["metric"]),
            ):
                for x, y in zip(curve["steps"], ys):
                    want.append([r["run"], r["config"]["task"], name, unit, x, y])
        got = [
            [int(a), b, c, d, float(e), None if v == "" else float(v)]
            for a, b, c, d, e, v in rows[1:]
        ]
        assert got == want and len(want) >= 4, (got, want)
        assert all(y is not None for _r, _t, name, _u, _x, y in want if name != "return")

        # Watch run 2's policy: loading from the click until the watched run's first frame
        pg.click("#btn-rl-watch")
        assert pg.get_attribute("#btn-rl-watch", "aria-busy") == "true"
        assert pg.text_content("#btn-rl-watch") == "loading..." and pg.is_disabled("#btn-rl-watch")
        assert pg.get_attribute("#rl-watch-status", "data-state") == "loading"
        assert pg.is_visible("#rl-watch-status")
        # the checkpoint's ONNX export: a child importing torch (6 s idle, 20 s loaded)
        pg.wait_for_selector("#rl-watch-status[data-state='watching']", timeout=90000)
        state = page_api(pg, "GET", "/api/state")[1]
        assert state["watch"]["run"] == 2 and state["watch"]["task"] == "asr/Throw-v0"
        run_id = pg.get_attribute("#rl-watch-status", "data-run")
        # the plots show the watched run (its figure drawn, its frames plotted)
        assert run_id == str(state["run_id"]) == str(pg.evaluate("() => window.asrDebug.runId"))
        assert pg.get_attribute("#btn-rl-watch", "aria-busy") is None
        assert pg.text_content("#btn-rl-watch") == "watch"
        pg.click("#btn-rl-manual")
        pg.wait_for_selector("#rl-watch-status", state="hidden", timeout=20000)
        assert not pg.evaluate("() => window.asrTest.errors"), "an error was shown"
        assert not pg.js_errors, pg.js_errors
