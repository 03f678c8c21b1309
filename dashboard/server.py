"""Serving the dashboard with uvicorn, with the limits of dashboard/settings.py applied where only
the server can apply them:

- WebSocket messages from clients larger than Settings.max_message_bytes close the connection
  with code 1009 before they are read whole (uvicorn's ws_max_size);
- a WebSocket client whose connection takes no data for Settings.client_stall_s seconds once
  its buffers are full (it stopped reading) is disconnected. The app stops queueing for it long
  before (its queue is bounded, dashboard/subscribers.py), but only the server can drop the
  connection: asyncio's close() would wait forever for such a client to take the data already
  written.
- an HTTP connection must send a whole request head within Settings.header_timeout_s of its
  first byte (or of connecting), and the body within body_timeout_s of the head, else it is
  closed: uvicorn's keep-alive timeout only runs between requests, so without this a client
  sending half a request line holds its connection for ever (slowloris);
- at most Settings.max_connections connections are open (HTTP and WebSocket together); one more
  is closed as soon as it is accepted, before it costs anything;
- on SIGTERM, requests still running after SHUTDOWN_S are cancelled, so a request waiting on a
  worker thread that never returns does not keep the server up;
- uvicorn logs every request's and WebSocket's path with its query string: a token given as
  ?token= is logged as <hidden> (the token is shown once, in the URL `asr dashboard` prints).
"""

import logging
import socket
from urllib.parse import parse_qsl, urlencode

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .app import create_app

try:  # uvicorn's default WebSocket protocol when the websockets package is installed
    from uvicorn.protocols.websockets.websockets_sansio_impl import (
        WebSocketsSansIOProtocol as _WebSocketProtocol,
    )
except ImportError:  # pragma: no cover - older uvicorn: its own protocol, without the stall limit
    _WebSocketProtocol = None  # type: ignore[assignment, misc]

SEND_BUFFER_BYTES = 256 << 10  # kernel send buffer of a WebSocket connection
STALL_CHECK_S = 0.5  # how often a paused connection is checked for progress
# on SIGTERM / Ctrl-C, requests still running this long are cancelled: without a bound, one
# waiting on a worker thread that never returns (a blocked read) keeps the server up for ever
SHUTDOWN_S = 5


def _stall_guarded(stall_s, sndbuf=SEND_BUFFER_BYTES):
    """uvicorn's WebSocket protocol, aborting a connection that takes no data for stall_s
    seconds while its writes are paused (the transport's buffer is full: the client does not
    read). A client that reads slowly, even slower than the frames come, makes progress and
    stays. The kernel's send buffer is capped at `sndbuf` so that a client that stops reading
    is noticed within a bounded amount of data, not after megabytes of it."""
    if _WebSocketProtocol is None:  # pragma: no cover
        return "auto"

    class StallGuardedWebSocket(_WebSocketProtocol):
        _stall_timer = None

        def connection_made(self, transport):
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)

        def pause_writing(self):
            super().pause_writing()
            if self._stall_timer is None:
                self._progress = (self.transport.get_write_buffer_size(), self.loop.time())
                self._stall_timer = self.loop.call_later(STALL_CHECK_S, self._check_stall)

        def resume_writing(self):
            super().resume_writing()
            self._cancel_stall_timer()

        def connection_lost(self, exc):
            self._cancel_stall_timer()
            super().connection_lost(exc)

        def _cancel_stall_timer(self):
            if self._stall_timer is not None:
                self._stall_timer.cancel()
                self._stall_timer = None

        def _check_stall(self):
            size, now = self.transport.get_write_buffer_size(), self.loop.time()
            if size < self._progress[0]:  # the client took some data
                self._progress = (size, now)
            elif now - self._progress[1] >= stall_s:
                self._stall_timer = None
                self.logger.info(
                    "WebSocket client %s took no data for %g s: disconnected", self.client, stall_s
                )
                self.transport.abort()
                return
            self._stall_timer = self.loop.call_later(STALL_CHECK_S, self._check_stall)

    return StallGuardedWebSocket


def _deadline_guarded(header_s, body_s, max_connections):
    """uvicorn's h11 HTTP protocol with the request read deadlines and the connection limit of
    the module doc. One timer per connection: armed when a request's first byte comes (or the
    connection opens), re-armed for the body when the head is complete, cancelled when the
    whole request is in (the app's answer may then take as long as it takes)."""

    class DeadlineH11(H11Protocol):
        _read_timer = None
        _phase = None  # "head" or "body" while a request is being read

        def connection_made(self, transport):
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                self.logger.warning(
                    "more than %d connections: %s closed", max_connections, self.client
                )
                transport.abort()
                return
            self._arm("head", header_s)

        def data_received(self, data):
            if self._phase is None and self._between_requests():
                self._arm("head", header_s)
            super().data_received(data)
            self._follow()

        def connection_lost(self, exc):
            self._disarm()
            super().connection_lost(exc)

        def _between_requests(self):
            return self.cycle is None or self.cycle.response_complete

        def _follow(self):
            """After h11 took data: the head or the whole request may be in now."""
            if self.transport.get_protocol() is not self:  # upgraded to a WebSocket
                self._disarm()
            elif self.conn.their_state is h11.SEND_BODY:
                if self._phase == "head":
                    self._arm("body", body_s)
            elif self.conn.their_state is not h11.IDLE:  # DONE, MUST_CLOSE, ...: all read
                self._disarm()

        def _arm(self, phase, seconds):
            self._disarm()
            self._phase = phase
            self._read_timer = self.loop.call_later(seconds, self._expired, phase, seconds)

        def _disarm(self):
            if self._read_timer is not None:
                self._read_timer.cancel()
            self._read_timer, self._phase = None, None

        def _expired(self, phase, seconds):
            self._read_timer, self._phase = None, None
            if self.transport.is_closing() or self.transport.get_protocol() is not self:
                return
            self.logger.info(
                "%s: request %s not received in %g s: connection closed",
                self.client,
                phase,
                seconds,
            )
            self.transport.abort()

    return DeadlineH11


HIDDEN = "<hidden>"


def hide_token(text):
    """`text` with the token of a URL's query string (path?...token=...) replaced by HIDDEN."""
    path, sep, query = text.partition("?")
    if not sep:
        return text
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(key == "token" for key, _ in pairs):
        return text
    hidden = [(key, HIDDEN if key == "token" else value) for key, value in pairs]
    return f"{path}?{urlencode(hidden, safe='<>')}"


class HideToken(logging.Filter):
    """A log filter: the token in the URLs a record holds (its arguments and message) hidden."""

    def filter(self, record):
        if isinstance(record.args, tuple):
            record.args = tuple(hide_token(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = hide_token(record.msg)
        return True


def _hide_tokens_in_logs():
    """HideToken on uvicorn's loggers of requests ("uvicorn.access") and WebSocket handshakes
    ("uvicorn.error"), once per process."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, HideToken) for f in logger.filters):
            logger.addFilter(HideToken())


def uvicorn_config(settings, port=None, log_level="info"):
    """A uvicorn.Config serving create_app(settings) on settings.host and `port` (None:
    settings.port), the token hidden in its logs."""
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port if port is None else port,
        log_level=log_level,
        ws=_stall_guarded(settings.client_stall_s),
        ws_max_size=settings.max_message_bytes,
        http=_deadline_guarded(
            settings.header_timeout_s, settings.body_timeout_s, settings.max_connections
        ),
        timeout_graceful_shutdown=SHUTDOWN_S,
    )
    _hide_tokens_in_logs()  # after uvicorn.Config, which sets up its loggers afresh
    return config


def serve(settings, port=None, log_level="info"):
    """Run the dashboard until interrupted."""
    uvicorn.Server(uvicorn_config(settings, port, log_level)).run()
