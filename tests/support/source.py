"""Reading asr's Python source in tests: the modules a file imports and the identifiers its code
uses."""

import ast


def imported_modules(path):
    """Every module a Python file imports, at any depth (also inside functions), with the names
    imported from them as module.name."""
    names = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def code_names(path):
    """The identifiers a Python file's code uses (names, attributes, arguments, keywords), its
    strings and comments left out."""
    names = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
    return names
