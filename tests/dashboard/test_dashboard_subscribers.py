"""A client that reads slower than the runner publishes gets the extend frames waiting for it
merged into one message (dashboard/subscribers.py, issue 46): every frame's span, decimated, in
order, with the newest state of the 3-D view; a client that keeps up gets every frame as it is.
Messages are built as the runner builds them (figure.extend_message), the merge is checked
against the frames' own arrays."""

import asyncio
import json

import numpy as np

from asr_dashboard import figure as fig
from asr_dashboard.subscribers import MERGED_MAX_SAMPLES, Subscriber, merge_extends

N, J = 2, 2  # instances, joints
N_TRACES = N * J * len(fig.FRAME_FIELDS)


def frame(k, steps=20, dt=1e-3):
    """Runner frame k: `steps` steps from t = k * steps * dt; q = t + instance + joint / 10."""
    t = (k * steps + np.arange(steps)) * dt + dt
    q = t[None, :, None] + np.arange(N)[:, None, None] + np.arange(J)[None, None, :] / 10
    fields = {f: q * (1 + s) for s, f in enumerate(fig.FRAME_FIELDS)}
    return {"t": t, **fields}


def extend_text(k, steps=20, ghost=False, run_id=1, clamped=()):
    msg = fig.extend_message(frame(k, steps), N_TRACES)
    robot3d = {"poses": [[[k] * 12]]}
    if ghost:
        robot3d["ghost"] = [[[-k] * 12]]
    msg.update(t=float(frame(k, steps)["t"][-1]), frame=k, run_id=run_id, clamped=list(clamped))
    msg.update(scene_id=3, robot3d=robot3d)
    return fig.dumps(msg)


def test_merged_frames_keep_every_span_in_order():
    texts = [extend_text(k, ghost=k == 1, clamped=["joint2"] if k == 2 else ()) for k in range(5)]
    text, n = merge_extends(texts)
    m = json.loads(text)
    assert n == 5 and m["merged"] == 5 and m["type"] == "extend"
    # 100 samples joined, cut to 50 evenly in time: the first and the newest kept, each the
    # first sample at or after its grid time
    t_all = np.concatenate([frame(k)["t"] for k in range(5)])
    grid = np.linspace(t_all[0], t_all[-1], MERGED_MAX_SAMPLES)
    idx = np.unique(np.concatenate([np.searchsorted(t_all, grid - 1e-12), [0, t_all.size - 1]]))
    want = t_all[idx]
    for k in range(N_TRACES):
        np.testing.assert_allclose(m["update"]["x"][k], want, atol=1e-9)
    assert len(m["update"]["y"][0]) == len(want) <= MERGED_MAX_SAMPLES
    # trace 0 is instance 0, joint 0, q: q = t there
    np.testing.assert_allclose(m["update"]["y"][0], want, atol=1e-5)
    assert m["t"] == json.loads(texts[-1])["t"] and m["frame"] == 4
    assert m["clamped"] == ["joint2"]  # a clamp in any merged frame is reported
    # the newest poses, the ghost of the newest frame that had one
    assert m["robot3d"]["poses"] == [[[4] * 12]] and m["robot3d"]["ghost"] == [[[-1] * 12]]


def test_merge_leaves_out_another_runs_frames_and_merges_merged_ones():
    text, n = merge_extends([extend_text(0, run_id=1), extend_text(1, run_id=2)])
    assert (
        n == 1
        and json.loads(text)["update"]["x"][0] == json.loads(extend_text(1))["update"]["x"][0]
    )
    once, _ = merge_extends([extend_text(k) for k in range(3)])
    twice, n = merge_extends([once, extend_text(3)])
    assert n == 2 and json.loads(twice)["merged"] == 4
    assert merge_extends(["not json", extend_text(0)]) == (extend_text(0), 1)


def test_a_client_behind_gets_merged_frames_one_keeping_up_every_frame():
    """Sixty frames into a subscriber of 8 messages that is never read: at most 8 messages
    held, and the extend frames among them still span the whole run; read after each frame, a
    client gets each frame unmerged."""

    async def main():
        slow = Subscriber(asyncio.get_running_loop(), max_items=8)
        for k in range(60):
            slow.put("extend", extend_text(k))
            if k % 7 == 0:
                slow.put("interaction", '{"type":"interaction"}')
        assert len(slow.items) <= 8 and slow.merges > 0
        kinds = []
        while slow.items:
            kinds.append(await slow.get())
        extends = [json.loads(t) for kind, t in kinds if kind == "extend"]
        assert len(extends) == 1  # the waiting frames, merged on the way out
        x = extends[0]["update"]["x"][0]
        assert x[-1] == json.loads(extend_text(59))["t"]  # the newest sample
        assert x[0] == frame(0)["t"][0]  # the first sample: the whole span, decimated
        assert all(a < b for a, b in zip(x, x[1:]))  # in order
        fast = Subscriber(asyncio.get_running_loop(), max_items=8)
        for k in range(10):
            fast.put("extend", extend_text(k))
            kind, text = await fast.get()
            assert kind == "extend" and text == extend_text(k)
        assert fast.merges == 0

    asyncio.run(main())
