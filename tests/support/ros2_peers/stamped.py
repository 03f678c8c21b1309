"""A ROS 2 peer recording asr's stamped state messages (tests/ros/test_ros2_stamped.py), run with
.venv-ros2's Python and asr/ros/interfaces' install, no asr: `python stamped.py 'JSON params'`;
prints a JSON result as its last stdout line.

Resets the lockstep node, sends one `step` per row of params["refs"] ((N, J, 2) references), each
after the previous period's state arrived, and returns, from the reset on: joint_states
(stamp ns, position, velocity, effort), actuator_states (stamp ns, name, {field: values} of every
float64[] field of the message), held_references (data) and held_references_stamped (stamp ns,
name, ref1, ref2, mode), and the ActuatorState fields in message order.
"""

import json
import sys

from asr_msgs.msg import ActuatorState, HeldReferences
from peer_base import Peer, ns_of, qos
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray


def record(peer, p):
    fields = [f for f, t in ActuatorState.get_fields_and_field_types().items() if "double" in t]
    joints, states, held = [], [], []
    sub = peer.node.create_subscription
    sub(
        JointState,
        "joint_states",
        lambda m: peer._add(
            joints, (ns_of(m.header.stamp), list(m.position), list(m.velocity), list(m.effort))
        ),
        qos(),
    )
    sub(
        ActuatorState,
        "actuator_states",
        lambda m: peer._add(
            states,
            (ns_of(m.header.stamp), list(m.name), {f: list(getattr(m, f)) for f in fields}),
        ),
        qos(),
    )
    sub(
        HeldReferences,
        "held_references_stamped",
        lambda m: peer._add(
            held,
            (ns_of(m.header.stamp), list(m.name), list(m.ref1), list(m.ref2), list(m.mode)),
        ),
        qos(),
    )
    step = peer.publisher(Float64MultiArray, "step")
    start = peer.reset()
    n = len(p["refs"])
    for k, refs in enumerate(p["refs"]):
        step.publish(Float64MultiArray(data=[float(x) for row in refs for x in row]))
        peer.wait(
            lambda k=k: len(peer.states) - peer.last_reset_index(start) > k + 1,
            f"the state of step {k + 1}",
        )
    last = peer.states[peer.last_reset_index(start) + n][0]
    peer.wait(lambda: any(s[0] == last for s in states), "actuator_states of the last step")
    peer.wait(lambda: any(h[0] == last for h in held), "held_references_stamped of the last")
    peer.wait(lambda: any(j[0] == last for j in joints), "joint_states of the last step")
    final = next(h for h in held if h[0] == last)
    final = [x for pair in zip(final[2], final[3]) for x in pair]
    peer.wait(lambda: peer.held and peer.held[-1][0] == final, "held_references of the last")
    with peer.cond:

        def since_reset(items):  # from the last stamp-0 item on
            zero = max(i for i, item in enumerate(items) if item[0] == 0)
            return items[zero:]

        # held_references carries no stamp: the last n + 1 are those of the reset and steps
        return {
            "fields": fields,
            "joint_states": since_reset(joints),
            "actuator_states": since_reset(states),
            "held_stamped": since_reset(held),
            "held": [h[0] for h in peer.held[-(n + 1) :]],
        }


if __name__ == "__main__":
    params = json.loads(sys.argv[1])
    peer = Peer()
    try:
        result = record(peer, params)
    except Exception:  # the reason on stderr, a failing exit status (see Peer.finish)
        import os
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    peer.finish(result)
