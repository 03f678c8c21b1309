"""assert_ros_package: an exported ROS package zip (ROS 1 or ROS 2) has the files and metadata it
must (tests/dashboard/test_dashboard_ros_export.py, test_dashboard_rl.py,
test_every_task_dashboard.py)."""

import io
import xml.etree.ElementTree as ET
import zipfile


def assert_ros_package(data, pkg, ros):
    """The zip `data` holds the package folder `pkg`/ of ROS version `ros`: for ROS 1 a catkin
    package (package.xml format 2, CMakeLists.txt, buildtool catkin), for ROS 2 an ament_python
    one (package.xml format 3, setup.py, the resource/<pkg> marker, build type ament_python).
    Returns the zip's names."""
    z = zipfile.ZipFile(io.BytesIO(data))
    names = set(z.namelist())
    manifest = ET.fromstring(z.read(f"{pkg}/package.xml"))
    assert manifest.findtext("name") == pkg
    tools = {e.text for e in manifest.iter("buildtool_depend")}
    if ros == 1:
        assert manifest.get("format") == "2", manifest.attrib
        assert "catkin" in tools, tools
        assert f"{pkg}/CMakeLists.txt" in names, names
        assert f"{pkg}/setup.py" not in names, names
    else:
        assert manifest.get("format") == "3", manifest.attrib
        assert [e.text for e in manifest.iter("build_type")] == ["ament_python"], tools
        assert {f"{pkg}/setup.py", f"{pkg}/resource/{pkg}"} <= names, names
        assert f"{pkg}/CMakeLists.txt" not in names, names
    return names
