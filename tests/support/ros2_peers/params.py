"""A ROS 2 parameter client peer for asr's node (tests/ros/test_ros2_params.py), run with
.venv-ros2's Python and no asr: `python params.py 'JSON params'`. What `ros2 param list /
describe / get / set` do, through rcl_interfaces' parameter services of node /asr: lists and
describes the parameters, resets the node, sets params["sets"] ([[name, value], ...] one call
each, set_parameters) and params["atomic"] (one set_parameters_atomically call), reads the
values back, then runs params["steps"] lockstep periods with the held commands; then sends
params["mirror"] ([parameter, value]) as a stiffness_preset topic command and waits for the
parameter to follow, and resets and waits for every parameter to be as at the start. Prints a
JSON result as its last stdout line."""

import json
import sys
import time

from peer_base import DEADLINE_S, Peer
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import (
    DescribeParameters,
    GetParameters,
    ListParameters,
    SetParameters,
    SetParametersAtomically,
)
from std_msgs.msg import Float64, Float64MultiArray

NODE = "/asr"


def to_msg(name, value):
    if isinstance(value, bool):
        v = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    elif isinstance(value, int):
        v = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    elif isinstance(value, float):
        v = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    else:
        v = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    return Parameter(name=name, value=v)


def from_msg(v):
    return {
        ParameterType.PARAMETER_BOOL: v.bool_value,
        ParameterType.PARAMETER_INTEGER: v.integer_value,
        ParameterType.PARAMETER_DOUBLE: v.double_value,
        ParameterType.PARAMETER_STRING: v.string_value,
    }.get(v.type)


def describe(d):
    out = {"type": d.type, "read_only": d.read_only, "description": d.description}
    if d.floating_point_range:
        r = d.floating_point_range[0]
        out["range"] = [r.from_value, r.to_value]
    if d.integer_range:
        r = d.integer_range[0]
        out["range"] = [r.from_value, r.to_value]
    return out


def poll(predicate, timeout=DEADLINE_S):
    """True once predicate() holds (checked every 0.05 s), False after `timeout` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def main(peer, p):
    names = list(
        peer.call(ListParameters, f"{NODE}/list_parameters", ListParameters.Request()).result.names
    )
    desc = peer.call(
        DescribeParameters, f"{NODE}/describe_parameters", DescribeParameters.Request(names=names)
    ).descriptors

    def get(which):
        got = peer.call(GetParameters, f"{NODE}/get_parameters", GetParameters.Request(names=which))
        return [from_msg(v) for v in got.values]

    before = get(names)
    peer.reset()
    sets = []
    for name, value in p["sets"]:
        req = SetParameters.Request(parameters=[to_msg(name, value)])
        r = peer.call(SetParameters, f"{NODE}/set_parameters", req).results[0]
        sets.append([r.successful, r.reason])
    req = SetParametersAtomically.Request(parameters=[to_msg(n, v) for n, v in p["atomic"]])
    r = peer.call(SetParametersAtomically, f"{NODE}/set_parameters_atomically", req).result
    atomic = [r.successful, r.reason]
    after = get(names)
    step = peer.publisher(Float64MultiArray, "step")
    start = peer.last_reset_index()
    with peer.cond:
        held0 = len(peer.held)
    for k in range(p["steps"]):
        step.publish(Float64MultiArray(data=[]))
        peer.wait(lambda k=k: len(peer.states) - start > k + 1, f"the state of step {k + 1}")
    got = peer.states[start:]
    peer.wait(lambda: len(peer.held) >= held0 + p["steps"], "held_references of every step")
    held = [h[0] for h in peer.held[held0 : held0 + p["steps"]]]
    # the stiffness preset parameters follow the held presets: a topic command, then a reset
    name, value = p["mirror"]
    joint = name.split(".")[1]
    peer.publisher(Float64, f"{joint}/stiffness_preset").publish(Float64(data=value))
    mirrored = poll(lambda: get([name])[0] == value)
    peer.reset()
    presets = [n for n in names if n.endswith(".stiffness_preset")]
    initial = [v for n, v in zip(names, before) if n in presets]
    poll(lambda: get(presets) == initial)
    after_reset = get(names)
    return {
        "names": names,
        "descriptors": {n: describe(d) for n, d in zip(names, desc)},
        "before": dict(zip(names, before)),
        "after": dict(zip(names, after)),
        "sets": sets,
        "atomic": atomic,
        "stamps": [s[0] for s in got],
        "q": [s[1] for s in got],
        "held": held,
        "mirrored": mirrored,
        "after_reset": dict(zip(names, after_reset)),
    }


if __name__ == "__main__":
    peer = Peer()
    peer.finish(main(peer, json.loads(sys.argv[1])))
