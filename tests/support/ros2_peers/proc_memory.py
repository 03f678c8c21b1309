"""A process's resident memory and liveness from /proc (Linux), for the tests that bound a
node's memory or stop it (tests/ros/test_ros2_node_bounds.py through flood.py,
tests/ros/test_ros_node_bounds.py). Standard library only: the ROS 2 peers import it without
asr."""


def rss_kb(pid):
    """VmRSS of process `pid`, kB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def running(pid):
    """Whether process `pid` still runs (not gone, not a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1] != "Z"
    except FileNotFoundError:
        return False
    return False
