"""The dashboard page's scripts (dashboard/static), read as text, no browser: one ES-module graph
rooted at app.js. index.html loads plotly.min.js (a vendor bundle that sets window.Plotly) and
app.js; every other script is a module that app.js reaches through `import`. The graph has no
cycle (a dynamic `import()` counts as an edge: it must not hide one), and no module reads
another's `window.asr*` global (those are handles for tests and the console, set and read by
one file)."""

import re
from html.parser import HTMLParser
from pathlib import Path

from tests.support.paths import ROOT  # noqa: E402

STATIC = ROOT / "dashboard" / "static"
VENDOR = {"/static/plotly.min.js"}  # classic vendor bundles the page may load
ENTRY = "app.js"

# import x from "./y.js"; import { a, b } from "./y.js"; import * as m from "./y.js";
# import "./y.js"; export { a } from "./y.js"; import("./y.js") / import("/static/y.js")
STATIC_IMPORT = re.compile(
    r"""^\s*(?:import|export)\s+(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']""", re.M
)
DYNAMIC_IMPORT = re.compile(r"""\bimport\(\s*["']([^"']+)["']\s*\)""")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


class ScriptTags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts.append(dict(attrs))


def script_tags(html: str) -> list[dict[str, str | None]]:
    parser = ScriptTags()
    parser.feed(html)
    return parser.scripts


def resolve(spec: str) -> str | None:
    """The file name under static/ a module specifier names, None for a vendor module
    (/static/vendor/..., served from the system's packages)."""
    if spec.startswith("/static/vendor/"):
        return None
    for prefix in ("/static/", "./"):
        if spec.startswith(prefix) and "/" not in spec[len(prefix) :]:
            return spec[len(prefix) :]
    raise AssertionError(f"module specifier {spec!r}: expected ./name.js or /static/...")


def imports(text: str) -> set[str]:
    code = COMMENT.sub("", text)
    specs = STATIC_IMPORT.findall(code) + DYNAMIC_IMPORT.findall(code)
    return {name for name in map(resolve, specs) if name is not None}


def module_graph() -> dict[str, set[str]]:
    return {p.name: imports(p.read_text(encoding="utf-8")) for p in sorted(STATIC.glob("*.js"))}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path [a, b, ..., a], None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_parser_reads_the_import_forms():
    text = """
    import { a, b } from "./one.js";
    import * as THREE from "/static/vendor/three/build/three.module.js";
    import two from './two.js';
    import "./three.js";
    export { c } from "./four.js";
    // import { x } from "./commented.js";
    /* import { y } from "./block.js"; */
    const m = await import("/static/five.js");
    """
    assert imports(text) == {"one.js", "two.js", "three.js", "four.js", "five.js"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_every_page_script_but_the_vendor_bundle_is_a_module():
    tags = script_tags((STATIC / "index.html").read_text(encoding="utf-8"))
    classic = [
        t.get("src") for t in tags if t.get("type") != "module" and t.get("src") not in VENDOR
    ]
    assert not classic, (
        f"classic scripts in index.html (make them modules imported by app.js): {classic}"
    )
    modules = [t.get("src") for t in tags if t.get("type") == "module"]
    assert modules == [f"/static/{ENTRY}"], f"index.html loads one module, the entry: {modules}"


def test_every_dashboard_script_is_in_the_module_graph_of_app_js():
    graph = module_graph()
    missing = {name for deps in graph.values() for name in deps if name not in graph}
    assert not missing, f"imports of files not in dashboard/static: {missing}"
    reached, todo = set(), [ENTRY]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    unreached = sorted(set(graph) - reached - {Path(v).name for v in VENDOR})
    assert not unreached, (
        f"scripts app.js does not import (directly or through others): {unreached}"
    )


def test_the_module_graph_has_no_cycle():
    cycle = find_cycle(module_graph())
    assert cycle is None, f"import cycle among dashboard/static modules: {' -> '.join(cycle or [])}"


def test_modules_talk_through_imports_not_window_globals():
    """A `window.asr*` handle is written and read in one file only (the one that owns it): the
    page's modules call each other through their exports."""
    users: dict[str, set[str]] = {}
    for path in sorted(STATIC.glob("*.js")):
        for name in set(
            re.findall(r"window\.(asr\w+)", COMMENT.sub("", path.read_text(encoding="utf-8")))
        ):
            users.setdefault(name, set()).add(path.name)
    shared = {name: sorted(files) for name, files in users.items() if len(files) > 1}
    assert not shared, f"window globals used across modules (import them instead): {shared}"
