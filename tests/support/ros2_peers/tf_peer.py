"""A ROS 2 viewer-side peer for asr's node (tests/ros/test_ros2_tf.py), run with .venv-ros2's
Python and no asr: `python tf_peer.py SCENARIO 'JSON params'`; prints a JSON result as its last
stdout line. Scenarios:

- description: joins late (after the node's joint_states_latest arrived), then subscribes
  robot_description (transient local, depth 1, as robot_state_publisher and RViz do); returns
  the text and the number of messages received.
- tf: (lockstep node) subscribes /tf and /tf_static, resets, sends one `step` per row of
  params["refs"] ((N, J, 2) references), each after the previous period's state and /tf
  arrived; rebuilds every link's world pose at every step by chaining the transforms from the
  root frame (its own quaternion algebra, not asr's); returns the poses, the stamps and the
  tree (child -> parent, which links came on /tf_static).
"""

import json
import sys
import time

import numpy as np
from peer_base import Peer, ns_of, qos
from std_msgs.msg import Float64MultiArray, String


def description(peer, p):
    peer.wait(lambda: peer.latest is not None, "joint_states_latest (asr's node)")
    got = []
    peer.node.create_subscription(
        String, "robot_description", lambda m: peer._add(got, m.data), qos(1, latched=True)
    )
    peer.wait(lambda: len(got) >= 1, "robot_description")
    time.sleep(0.5)  # a second message would arrive now; the node publishes it once
    return {"text": got[0], "count": len(got)}


def _quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def _quat_matrix(q):
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _chain(edges):
    """{link: [x, y, z, qw, qx, qy, qz]} world poses from {child: (parent, xyz, wxyz)}: the
    root (a parent that is no child) is the identity."""
    world = {}

    def pose(link):
        if link not in edges:
            return np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
        if link not in world:
            parent, xyz, quat = edges[link]
            pp, pq = pose(parent)
            world[link] = (pp + _quat_matrix(pq) @ np.asarray(xyz), _quat_mul(pq, quat))
        return world[link]

    return {link: [*map(float, pose(link)[0]), *map(float, pose(link)[1])] for link in edges}


def _edges(msg):
    out = {}
    for t in msg.transforms:
        tr, ro = t.transform.translation, t.transform.rotation
        out[t.child_frame_id] = (
            t.header.frame_id,
            [tr.x, tr.y, tr.z],
            [ro.w, ro.x, ro.y, ro.z],
            ns_of(t.header.stamp),
        )
    return out


def tf(peer, p):
    from tf2_msgs.msg import TFMessage

    dynamic, static = [], []
    sub = peer.node.create_subscription
    sub(TFMessage, "/tf", lambda m: peer._add(dynamic, _edges(m)), qos())
    sub(TFMessage, "/tf_static", lambda m: peer._add(static, _edges(m)), qos(1, latched=True))
    step = peer.publisher(Float64MultiArray, "step")
    start = peer.reset()
    peer.wait(lambda: len(static) >= 1, "/tf_static")

    def tf_at(stamp):
        return [e for e in dynamic if e and next(iter(e.values()))[3] == stamp]

    poses, stamps = [], []
    for k, refs in enumerate(p["refs"]):
        step.publish(Float64MultiArray(data=[float(x) for row in refs for x in row]))
        peer.wait(
            lambda k=k: len(peer.states) - peer.last_reset_index(start) > k + 1,
            f"the state of step {k + 1}",
        )
        stamp = peer.states[peer.last_reset_index(start) + k + 1][0]
        peer.wait(lambda stamp=stamp: tf_at(stamp), f"/tf of step {k + 1}")
        with peer.cond:
            moving = tf_at(stamp)[-1]
            fixed = static[-1]
        stamps.append(stamp)
        edges = {c: e[:3] for c, e in {**fixed, **moving}.items()}
        poses.append(_chain(edges))
    with peer.cond:
        fixed, moving = static[-1], dynamic[-1]
    return {
        "stamps": stamps,
        "tf_stamps": sorted({e[3] for e in moving.values()}),
        "poses": poses,
        "parents": {c: e[0] for c, e in {**fixed, **moving}.items()},
        "static": sorted(fixed),
        "static_stamps": sorted({e[3] for e in fixed.values()}),
        "q": [s[1] for s in peer.states[peer.last_reset_index(start) + 1 :]],
    }


if __name__ == "__main__":
    scenario, params = sys.argv[1], json.loads(sys.argv[2])
    peer = Peer()
    try:
        result = {"description": description, "tf": tf}[scenario](peer, params)
    except Exception:  # the reason on stderr, a failing exit status (see Peer.finish)
        import os
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    peer.finish(result)
