"""Size and nesting limits on what clients send, checked before anything is parsed: a 50 MB body
or WebSocket message is refused without being read whole, JSON nested deeper than
Settings.max_json_depth is refused without being parsed (Python's json recurses per level), and
so is a number longer than Python parses (sys.get_int_max_str_digits(), 4300 digits: its json
raises ValueError, not a JSON error). The scan is linear in the size of the text.

HTTP: a body larger than Settings.max_body_bytes answers 413 (at once when Content-Length says
so, else as soon as the received bytes pass the limit); too deep JSON answers 422. WebSocket:
uvicorn closes a connection whose message exceeds max_message_bytes with code 1009 (the limit
is its ws_max_size, dashboard/server.py); dashboard/routes/stream.py checks it again for other
servers and answers too deep JSON or too long numbers with an error message.

Rate: each WebSocket client has a MessageBudget (a token bucket, Settings.ws_messages_per_s and
ws_message_burst): a message beyond it is dropped unread, so a client sending thousands of
messages cannot take the event loop and the runner thread from the others' streams."""

import re
import sys
import time

from .security import refuse

# JSON strings (whose brackets do not nest) and the brackets outside them. A string is matched
# from its opening quote to its closing one, or to the end of the text when unterminated, so the
# scan never starts over inside it (linear time, also for 1 MiB of escaped quotes).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def _max_digits():
    """The longest number Python's json parses (0: no limit, as sys reports it)."""
    get = getattr(sys, "get_int_max_str_digits", None)
    return get() if get else 0


def json_problem(data, max_depth):
    """An error text if the JSON text `data` (bytes) nests deeper than `max_depth` or holds a
    number of more digits than Python's int() takes (it would raise ValueError), else None."""
    outside = _STRING.sub(b"", data)
    depth = 0
    for m in _BRACKET.finditer(outside):
        depth += 1 if m.group() in (b"[", b"{") else -1
        if depth > max_depth:
            return f"JSON nested more than {max_depth} levels deep (limit {max_depth})"
    digits = _max_digits()
    if digits:
        # a run of digits counted from its first one (a search from every digit is quadratic)
        m = re.search(rb"(?<![0-9])[0-9]{%d}[0-9]*" % (digits + 1), outside)
        if m:
            return f"a number of {m.end() - m.start()} digits (limit {digits} digits)"
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
        problem = size_problem(
            int(declared) if declared.isdigit() else 0, self.max_bytes, "request body"
        )
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
        problem = json_problem(body, self.max_depth)
        if problem:
            return await refuse(scope, receive, send, 422, f"request body: {problem}")
        return await self.app(scope, _replay(body, receive), send)


def _replay(body, receive):
    """receive() giving the body already read, then the client's later messages (disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed():
        return pending.pop() if pending else await receive()

    return replayed


class MessageBudget:
    """Token bucket of one client's messages: `burst` at once, `rate` per second on average.
    take() is True for a message within the budget; `dropped` counts the messages refused since
    the last one taken (the client is told once per run of drops, and closed after a long one:
    flooding())."""

    def __init__(self, rate, burst, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens, self.time = float(burst), clock()
        self.dropped = 0

    def take(self):
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.time) * self.rate)
        self.time = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            self.dropped = 0
            return True
        self.dropped += 1
        return False

    def flooding(self):
        """True after 4 bursts' worth of messages dropped in a row: the client is not slowing
        down after being told, only a flood sends so many."""
        return self.dropped > 4 * self.burst

    def problem(self):
        return (
            f"too many messages: at most {self.rate:g} per second ({self.burst} at once); "
            "this one and the next ones beyond the rate are dropped"
        )
