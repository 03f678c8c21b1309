"""Size and nesting limits on what clients send, checked before anything is parsed: a 50 MB body
or WebSocket message is refused without being read whole, JSON nested deeper than
Settings.max_json_depth is refused without being parsed (Python's json recurses per level).

HTTP: a body larger than Settings.max_body_bytes answers 413 (at once when Content-Length says
so, else as soon as the received bytes pass the limit); too deep JSON answers 422. WebSocket:
uvicorn closes a connection whose message exceeds max_message_bytes with code 1009 (the limit
is its ws_max_size, dashboard/server.py); dashboard/routes/stream.py checks it again for other
servers and answers too deep JSON with an error message."""
import re

from dashboard.security import refuse

# JSON strings (whose brackets do not nest) and the brackets outside them
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth_problem(data, limit):
    """An error text if the JSON text `data` (bytes) nests deeper than `limit`, else None."""
    depth = 0
    for m in _BRACKET.finditer(_STRING.sub(b"", data)):
        depth += 1 if m.group() in (b"[", b"{") else -1
        if depth > limit:
            return f"JSON nested more than {limit} levels deep (limit {limit})"
    return None


def size_problem(size, limit, what):
    if size > limit:
        return f"{what} of {size} bytes or more is too large (limit {limit} bytes)"
    return None


class BodyLimit:
    """ASGI middleware: HTTP request bodies of at most max_bytes bytes and max_depth JSON levels.
    The body is read here (bounded) and handed on unchanged."""

    def __init__(self, app, max_bytes, max_depth):
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        problem = size_problem(int(declared) if declared.isdigit() else 0, self.max_bytes,
                               "request body")
        if problem:
            return await refuse(scope, receive, send, 413, problem)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            problem = size_problem(size, self.max_bytes, "request body")
            if problem:
                return await refuse(scope, receive, send, 413, problem)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        problem = json_depth_problem(body, self.max_depth)
        if problem:
            return await refuse(scope, receive, send, 422, f"request body: {problem}")
        return await self.app(scope, _replay(body, receive), send)


def _replay(body, receive):
    """receive() giving the body already read, then the client's later messages (disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed():
        return pending.pop() if pending else await receive()

    return replayed
