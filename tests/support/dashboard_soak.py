"""The dashboard soak: one cycle of every feature and robot, driven through the REST API the page
uses, for tests/dashboard/test_dashboard_soak.py (a few cycles, seconds) and
benchmarks/bench_dashboard_soak.py (cycles for hours, the server's RSS sampled). A cycle switches
to every robot that loads (its default variant), runs compare of up to N_COMPARE instances there
and resets it, saves and loads the workspace, exports the history (.npz and .html), runs a short
ILC, an interaction session with a force reference, and, once a policy is trained, watches it and
goes back to manual control; the policy exports only where asked (each is a child process with
torch, seconds of CPU). Every step is checked to have worked: a soak of failing requests would
measure nothing."""

import json
import time
import urllib.error
import urllib.request

from tests.support.dashboard_server import wait_for

N_COMPARE = 8  # compare instances per robot (fewer where its preset range cannot give them)
SIM_ADVANCE_S = 0.1  # simulated s each configuration runs before the next one (s)
DEADLINE_S = 60.0  # the longest wait for one step of the cycle (s of wall time)


class Http:
    """A dashboard's REST API over HTTP at base URL `url` (a real server)."""

    def __init__(self, url, timeout=120.0):
        self.url, self.timeout = url, timeout

    def request(self, method, path, body=None):
        """(status, answer bytes)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path, data=data, headers={"Content-Type": "application/json"}, method=method
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()


class InProcess:
    """The same API through FastAPI's TestClient `client` (the app in this process)."""

    def __init__(self, client):
        self.client = client

    def request(self, method, path, body=None):
        r = self.client.request(method, path, json=body)
        return r.status_code, r.content


def call(api, method, path, body=None, expect=200):
    """The answer's bytes; an AssertionError naming the route when its status is not `expect`."""
    status, data = api.request(method, path, body)
    assert status == expect, f"{method} {path}: {status} {data[:300]!r}"
    return data


def get(api, path):
    return json.loads(call(api, "GET", path))


def post(api, path, body=None):
    return json.loads(call(api, "POST", path, {} if body is None else body))


def advance(api, seconds=SIM_ADVANCE_S):
    """Wait until the live simulation has run `seconds` of simulated time."""
    t = get(api, "/api/state")["time"]
    wait_for(
        lambda: get(api, "/api/state")["time"] >= t + seconds,
        DEADLINE_S,
        "the simulation to run",
        0.05,
    )


def robots(api):
    """[(name, default variant)] of the robots that load."""
    return [
        (r["name"], r["default_variant"])
        for r in get(api, "/api/robots")["robots"]
        if not r.get("error") and r["variants"]
    ]


def compare_presets(joints, n=N_COMPARE):
    """n presets valid for every joint with a preset (state joints' preset_range), evenly over
    the ranges' intersection; [] when no joint has one or the ranges do not meet."""
    ranges = [j["preset_range"] for j in joints if j["preset_range"]["kind"] != "none"]
    if not ranges:
        return []
    lo, hi = max(r["lo"] for r in ranges), min(r["hi"] for r in ranges)
    if not lo < hi:
        return []
    return [lo + (hi - lo) * (k + 1) / (n + 1) for k in range(n)]


def robot_tour(api, names, settle_s=SIM_ADVANCE_S):
    """Every robot of `names` [(robot, variant)]: switch, run `settle_s` (simulated s), compare,
    run, reset, leave compare; back to the first robot at the end. [(robot, instances
    compared)]."""
    done = []
    for name, variant in [*names, names[0]]:
        state = post(api, "/api/robot", {"robot": name, "variant": variant})
        assert state["robot"] == name, state["robot"]
        advance(api, settle_s)
        presets = compare_presets(state["joints"])
        if presets:
            assert len(post(api, "/api/compare", {"presets": presets})["compare"]) == len(presets)
            advance(api, settle_s)
            post(api, "/api/reset")
            post(api, "/api/compare", {"presets": []})
        done.append((name, len(presets)))
    return done


def workspace_and_exports(api, settle_s=SIM_ADVANCE_S, html=True):
    """Save the workspace and load it back; the .npz and (`html`) .html history exports."""
    ws = get(api, "/api/workspace")
    assert post(api, "/api/workspace", ws)["robot"] == ws["robot"]
    advance(api, settle_s)
    assert call(api, "POST", "/api/export.npz", {})[:2] == b"PK"
    if html:
        assert b"<html" in call(api, "POST", "/api/export.html", {})[:1000].lower()


def ilc(api):
    post(api, "/api/ilc/start", {"iterations": 1, "duration": 0.5})
    st = wait_for(
        lambda: (lambda s: not s["running"] and s)(get(api, "/api/ilc")), DEADLINE_S, "the ILC"
    )
    assert len(st["errors"]) == 1, st


def interaction(api, contact=True):
    """A direct-force session: start, (with `contact`: the tool over the plate, a 10 N
    reference), stop."""
    assert post(api, "/api/interaction/start", {"law": "direct_force"})["running"]
    if contact:
        wait_for(
            lambda: get(api, "/api/interaction/status")["fsm"] == "static",
            DEADLINE_S,
            "the contact",
        )
        post(api, "/api/interaction/reference", {"force": [0, 0, 10]})
    assert not post(api, "/api/interaction/stop")["running"]


def train(api, training):
    """A short training (RLStart body `training`), waited for: a policy to watch."""
    post(api, "/api/rl/start", training)
    st = wait_for(
        lambda: (lambda s: not s["running"] and s)(get(api, "/api/rl/status")),
        300,
        "the training to finish",
    )
    assert st["message"] == "finished" and st["can_watch"], st


def watch(api, task):
    """Watch the trained policy for a few env steps, then manual control again."""
    assert post(api, "/api/rl/watch")["watch"]["task"] == task
    wait_for(
        lambda: get(api, "/api/state")["watch"]["env_step"] >= 3, DEADLINE_S, "the policy acting"
    )
    post(api, "/api/rl/manual")


def policy_exports(api):
    status, onnx = api.request("POST", "/api/rl/policy.onnx", {})
    assert status == 200 and len(onnx) > 1000, status
    status, ros = api.request("POST", "/api/rl/policy.ros.zip?ros=2", {})
    assert status == 200 and ros[:2] == b"PK", status


def cycle(api, names, task=None, exports=False, settle_s=SIM_ADVANCE_S, short=False):
    """One soak cycle (the module doc); `task`: the trained policy's task (None: no watch);
    `exports`: the policy exports too; `settle_s`: simulated s each configuration runs;
    `short`: the tests' cycle, without the ILC and the interaction's contact (seconds of
    simulated time) and the .html export (5 MB). {phase: wall s} of its phases."""
    phases, t = {}, [time.monotonic()]

    def done(phase):
        now = time.monotonic()
        phases[phase] = now - t[0]
        t[0] = now

    robot_tour(api, names, settle_s)
    done("robots")
    workspace_and_exports(api, settle_s, html=not short)
    done("workspace, exports")
    if not short:
        ilc(api)
        done("ILC")
    interaction(api, contact=not short)
    done("interaction")
    if task is not None:
        watch(api, task)
        done("watch")
    if exports:
        policy_exports(api)
        done("policy exports")
    return phases


def rss_mb(pid):
    """Resident memory of process pid now (VmRSS), MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")
