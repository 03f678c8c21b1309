"""Who may talk to the dashboard. The server runs next to the user's browser, where every other
page the user visits can reach 127.0.0.1 too; three checks keep those pages out:

- Host: the Host header must be a name this server answers to (the loopback names, the address
  it was started with, the hosts of --allow-origin). A DNS-rebinding page reaches the server
  under its own domain name, so it is refused and cannot read /api/state or the exports. When
  the server listens on every interface (0.0.0.0, ::) any IP address is accepted as well (a
  rebinding attack needs a name) and a token is required (asr/cli.py).
- Origin: browsers apply no same-origin rule to WebSockets and send simple cross-origin POSTs
  without asking, but they always say which page sent them. The WebSocket and every
  state-changing request (not GET / HEAD / OPTIONS) must come from the dashboard's own origin
  (the URL it is addressed to) or one of --allow-origin. Clients that are not browsers send no
  Origin and are let through.
- Token (optional, on by default beyond loopback): required on every request and the WebSocket,
  as `?token=...` (the page then keeps it in an HttpOnly, SameSite=Strict cookie),
  `Authorization: token ...` / `Bearer ...`, or that cookie.

Refusals: HTTP 403 (Host, Origin) or 401 (token) with a JSON {"detail": reason}; the WebSocket
handshake is answered the same way (close code 1008 where a server cannot send a response).
"""

import ipaddress
import json
import secrets
from urllib.parse import parse_qs, urlsplit

from starlette.datastructures import Headers

from .errors import short

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WS_POLICY_VIOLATION = 1008


def _ip(name):
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def is_loopback(host):
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    ip = _ip(name)
    return name == "localhost" or (ip is not None and ip.is_loopback)


def is_wildcard(host):
    return host.strip("[]") in WILDCARD_HOSTS


def host_name(hostport):
    """The lower-case host name of a Host header value ('[::1]:8000' -> '::1'), None if it is
    malformed (userinfo, a path, spaces: nothing a browser sends)."""
    if any(c in hostport for c in "@/\\?# "):
        return None
    try:
        parts = urlsplit("//" + hostport)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return None
    return parts.hostname or None


def normalize_origin(text):
    """'HTTP://Box.lan:8000/' -> 'http://box.lan:8000'; ValueError unless it is an origin."""
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018
    except (AttributeError, ValueError):
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username
    ):
        raise ValueError(
            f"allow_origins: expected an origin like http://host:8000 (scheme, host "
            f"and optional port, no path), got {short(text)}"
        )
    return f"{parts.scheme}://{parts.netloc.lower()}"


class AccessPolicy:
    """The three checks of the module doc, built from the dashboard Settings."""

    def __init__(self, settings):
        self.token = settings.token
        self.origins = frozenset(normalize_origin(o) for o in settings.allow_origins)
        bind = settings.host.strip("[]").lower()
        self.any_address = is_wildcard(bind)
        self.hosts = (
            LOOPBACK_NAMES
            | {urlsplit(o).hostname for o in self.origins}
            | (set() if self.any_address else {bind})
        )

    def host_problem(self, host):
        name = host_name(host or "")
        if name in self.hosts or (self.any_address and name and _ip(name) is not None):
            return None
        return (
            f"Host header {short(host)} is not one this server answers to (valid: "
            f"{', '.join(sorted(self.hosts))}{', any IP address' * self.any_address}; "
            "dashboard --allow-origin adds one)"
        )

    def origin_problem(self, origin, host):
        if origin is None or origin.lower() in self.origins:
            return None
        if origin.lower() in (f"http://{host}".lower(), f"https://{host}".lower()):
            return None  # the dashboard's own page
        return (
            f"Origin {short(origin)} may not drive this dashboard: only its own page "
            "(or an origin given with dashboard --allow-origin)"
        )

    def presented_token(self, scope, headers):
        """(token or None, True when it came in the query string)."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        if query:
            return query[-1], True
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() in ("token", "bearer") and value.strip():
            return value.strip(), False
        return _cookie(headers.get("cookie", ""), cookie_name(scope)), False

    def token_problem(self, given):
        if self.token is None or (
            given is not None and secrets.compare_digest(given.encode(), self.token.encode())
        ):
            return None
        return (
            "this dashboard needs its token: open the URL it printed at start "
            "(http://host:port/?token=...), or send 'Authorization: token ...'"
        )


def _cookie(header, name):
    """The value of cookie `name` in a Cookie header. Parsed by hand: the browser also sends the
    cookies of other local servers (cookies ignore ports), and one malformed cookie among them
    must not hide ours (http.cookies drops or refuses the whole header)."""
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value.strip().strip('"')
    return None


def cookie_name(scope):
    """One cookie per port: cookies do not tell ports apart, two dashboards on one host must not
    overwrite each other's token."""
    server = scope.get("server") or ("", 0)
    return f"asr_token_{server[1]}"


class AccessGuard:
    """ASGI middleware applying an AccessPolicy to every HTTP request and WebSocket handshake."""

    def __init__(self, app, policy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        status, problem = 403, self.policy.host_problem(host)
        if problem is None and (
            scope["type"] == "websocket" or scope["method"] not in SAFE_METHODS
        ):
            problem = self.policy.origin_problem(headers.get("origin"), host)
        token, in_query = self.policy.presented_token(scope, headers)
        if problem is None:
            status, problem = 401, self.policy.token_problem(token)
        if problem is not None:
            return await refuse(scope, receive, send, status, problem)
        if in_query and self.policy.token is not None and scope["type"] == "http":
            send = _with_cookie(send, cookie_name(scope), token)
        return await self.app(scope, receive, send)


def _with_cookie(send, name, value):
    """send() that adds the token cookie to the response, so the page's own requests and its
    WebSocket carry the token without putting it in every URL."""
    cookie = f"{name}={value}; HttpOnly; SameSite=Strict; Path=/".encode("latin-1")

    async def wrapped(message):
        if message["type"] == "http.response.start":
            message = dict(
                message, headers=list(message.get("headers", [])) + [(b"set-cookie", cookie)]
            )
        await send(message)

    return wrapped


async def refuse(scope, receive, send, status, text):
    """Answer an HTTP request, or refuse a WebSocket handshake, with `status` and `text`."""
    body = json.dumps({"detail": f"asr dashboard: {text}"}).encode()
    start = {
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    if scope["type"] == "http":
        await send({"type": "http.response.start", **start})
        await send({"type": "http.response.body", "body": body})
        return
    await receive()  # websocket.connect
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", **start})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # the server answers 403 to a close before accept
        await send({"type": "websocket.close", "code": WS_POLICY_VIOLATION, "reason": text[:120]})
