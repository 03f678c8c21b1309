"""The whole valid range of a field a request broke, for its error message.

pydantic names only the bound that was broken ("Input should be less than or equal to 10"); a
user who typed 20 also wants to know the other end. The range is read from the JSON schema the
request models already publish (FastAPI's OpenAPI document for REST bodies and query
parameters, the TypeAdapter's schema for WebSocket messages), so it is defined once, by the
model's Field(ge=..., le=...), and written as "valid range [-10, 10]" ("(" or ")" for an
excluded end, "inf" for none).
"""

BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _resolve(node, defs):
    while isinstance(node, dict) and "$ref" in node:
        node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
    return node if isinstance(node, dict) else {}


def _tagged(alts, tag, defs):
    """The alternatives of a union whose `type` property is the constant `tag` (a discriminated
    union puts the tag into the error's location), else all of them."""
    hit = []
    for alt in alts:
        kind = _resolve(alt, defs).get("properties", {}).get("type", {})
        if kind.get("const") == tag or kind.get("enum") == [tag]:
            hit.append(alt)
    return hit or alts


def _bounds(node):
    lo, lo_open = node.get("minimum"), False
    if lo is None and "exclusiveMinimum" in node:
        lo, lo_open = node["exclusiveMinimum"], True
    hi, hi_open = node.get("maximum"), False
    if hi is None and "exclusiveMaximum" in node:
        hi, hi_open = node["exclusiveMaximum"], True
    if lo is None and hi is None:
        return None
    left = "(-inf" if lo is None else ("(" if lo_open else "[") + f"{lo:g}"
    right = "inf)" if hi is None else f"{hi:g}" + (")" if hi_open else "]")
    return f"{left}, {right}"


def _walk(node, path, defs):
    node = _resolve(node, defs)
    alts = node.get("anyOf") or node.get("oneOf")
    if alts:
        for alt in alts:
            found = _walk(alt, path, defs)
            if found:
                return found
        if path:  # the location names the union's tag first
            for alt in _tagged(alts, path[0], defs):
                found = _walk(alt, path[1:], defs)
                if found:
                    return found
        return None
    if not path:
        return _bounds(node)
    key, rest = path[0], path[1:]
    props = node.get("properties", {})
    if isinstance(key, str) and key in props:
        return _walk(props[key], rest, defs)
    if isinstance(node.get("additionalProperties"), dict):
        return _walk(node["additionalProperties"], rest, defs)
    if isinstance(key, int) and isinstance(node.get("items"), dict):
        return _walk(node["items"], rest, defs)
    return None


def schema_range(schema, loc, defs=None):
    """ "[lo, hi]" of the field at `loc` (its error location) in JSON `schema`, or None."""
    defs = defs if defs is not None else schema.get("$defs", {})
    try:
        return _walk(schema, list(loc), defs)
    except (TypeError, ValueError, RecursionError):  # a schema shape not foreseen: no range
        return None


def request_schema(app, route, loc):
    """(schema, defs, loc within it) of a REST request's body or query parameter, from the app's
    OpenAPI document, or None."""
    if route is None or not loc:
        return None
    doc = app.openapi()
    defs = doc.get("components", {}).get("schemas", {})
    methods = doc.get("paths", {}).get(getattr(route, "path", ""), {})
    for op in methods.values():
        if loc[0] == "body":
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            if "schema" in body:
                return body["schema"], defs, loc[1:]
        elif loc[0] == "query" and len(loc) > 1:
            for param in op.get("parameters", []):
                if param.get("in") == "query" and param.get("name") == loc[1]:
                    return param.get("schema", {}), defs, loc[2:]
    return None


def with_ranges(errors, find):
    """The errors, each broken bound's message followed by "; valid range [lo, hi]": `find(loc)`
    gives the range of a location (or None)."""
    out = []
    for e in errors:
        if e.get("type") in BOUND_ERRORS:
            span = find(tuple(e.get("loc", ())))
            if span:
                e = dict(e, msg=f"{e.get('msg', '')}; valid range {span}")
        out.append(e)
    return out
