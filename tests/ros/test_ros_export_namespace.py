"""The Plugin Manager configuration asr.ros.urdf.export_robot writes and `asr ros` agree on the
namespace: both default to asr.ros.node_core.DEFAULT_NAMESPACE, and the topic names the
toolbox's Plugin Manager composes from the file [Mengacci2021] are the ones asr's node serves."""

import inspect
import re

import pytest

from asr.cli import build_parser
from asr.ros.node import RosNode, run_node
from asr.ros.node_core import DEFAULT_NAMESPACE, NodeCore
from asr.ros.urdf import export_robot
from tests.conftest import require

ROBOT = "qbmove_arm_2dof"


def roscpp_clean(name):
    """A name as roscpp resolves it (ros::names::clean): repeated '/' collapsed, none trailing."""
    name = re.sub("/+", "/", name)
    return name[:-1] if len(name) > 1 and name.endswith("/") else name


def manager_topics(cfg):
    """The topics the toolbox's Plugin Manager node (in the root namespace) subscribes to and
    publishes, from its configuration: ns + "/reference_1" (relative: under "/"), and per joint
    "/" + ns + "/" + joint + ref1_topic_name (and ref2)."""
    ns = cfg["namespace"]
    refs = [roscpp_clean(f"/{ns}/reference_{i}") for i in (1, 2)]
    per_joint = [
        roscpp_clean("/" + ns + "/" + joint + topic)
        for key in ("ref1_topic_name", "ref2_topic_name")
        for joint, topic in zip(cfg["joints_name"], cfg[key])
    ]
    return refs, per_joint


def test_defaults_are_one_definition():
    parser = build_parser()
    assert parser.parse_args(["ros"]).namespace == DEFAULT_NAMESPACE
    assert parser.parse_args(["ros2"]).namespace == DEFAULT_NAMESPACE
    for f in (NodeCore, RosNode, run_node):
        assert inspect.signature(f).parameters["namespace"].default == DEFAULT_NAMESPACE, f


@pytest.mark.parametrize("namespace", [None, "arm_a"])
def test_plugin_manager_yaml_names_the_node_topics(tmp_path, namespace):
    """The default export (namespace None) carries `asr ros`' default namespace; a namespace
    given to both is carried too. The manager's topics are the node's."""
    yaml = require("yaml")
    kw = {} if namespace is None else {"namespace": namespace}
    paths = export_robot(ROBOT, out_dir=tmp_path, **kw)
    with open(paths["yaml"]) as f:
        cfg = yaml.safe_load(f)
    served = DEFAULT_NAMESPACE if namespace is None else namespace
    assert cfg["namespace"] == served
    core = NodeCore(ROBOT, namespace=served)
    refs, per_joint = manager_topics(cfg)
    # RosNode.topic: the node's names, from its namespace alone
    assert refs == [RosNode.topic(core, f"reference_{i}") for i in (1, 2)]
    node_joint_topics = [
        RosNode.topic(core, joint, topic.strip("/"))
        for key in ("ref1_topic_name", "ref2_topic_name")
        for joint, topic in zip(cfg["joints_name"], cfg[key])
    ]
    assert per_joint == node_joint_topics
    if namespace is None:
        assert refs == ["/reference_1", "/reference_2"]
        assert per_joint[0] == "/" + cfg["joints_name"][0] + cfg["ref1_topic_name"][0]


def test_an_empty_namespace_is_the_root(tmp_path):
    yaml = require("yaml")
    paths = export_robot(ROBOT, out_dir=tmp_path, namespace="")
    with open(paths["yaml"]) as f:
        assert yaml.safe_load(f)["namespace"] == ""
    with pytest.raises(ValueError, match="namespace: got 'a b', valid: '' \\(the root\\)"):
        export_robot(ROBOT, out_dir=tmp_path, namespace="a b")
