"""Serving the dashboard with uvicorn, with the limits of dashboard/settings.py applied where only
the server can apply them:

- WebSocket messages from clients larger than Settings.max_message_bytes close the connection
  with code 1009 before they are read whole (uvicorn's ws_max_size);
- a WebSocket client whose connection takes no data for Settings.client_stall_s seconds once
  its buffers are full (it stopped reading) is disconnected. The app stops queueing for it long
  before (its queue is bounded, dashboard/subscribers.py), but only the server can drop the
  connection: asyncio's close() would wait forever for such a client to take the data already
  written.
"""
import socket

import uvicorn

from dashboard.app import create_app

try:  # uvicorn's default WebSocket protocol when the websockets package is installed
    from uvicorn.protocols.websockets.websockets_sansio_impl import \
        WebSocketsSansIOProtocol as _WebSocketProtocol
except ImportError:  # pragma: no cover - older uvicorn: its own protocol, without the stall limit
    _WebSocketProtocol = None

SEND_BUFFER_BYTES = 256 << 10  # kernel send buffer of a WebSocket connection
STALL_CHECK_S = 0.5            # how often a paused connection is checked for progress


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
                self.logger.info("WebSocket client %s took no data for %g s: disconnected",
                                 self.client, stall_s)
                self.transport.abort()
                return
            self._stall_timer = self.loop.call_later(STALL_CHECK_S, self._check_stall)

    return StallGuardedWebSocket


def uvicorn_config(settings, port, log_level="info"):
    """A uvicorn.Config serving create_app(settings) on settings.host:port."""
    return uvicorn.Config(create_app(settings), host=settings.host, port=port,
                          log_level=log_level, ws=_stall_guarded(settings.client_stall_s),
                          ws_max_size=settings.max_message_bytes)


def serve(settings, port, log_level="info"):
    """Run the dashboard until interrupted."""
    uvicorn.Server(uvicorn_config(settings, port, log_level)).run()
