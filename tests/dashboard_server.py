"""A real dashboard server for the browser and load tests: uvicorn on 127.0.0.1 and a free
port, in a background thread, stopped at the end."""
import contextlib
import socket
import threading
import time

import uvicorn

from dashboard.app import create_app
from dashboard.settings import Settings


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(**settings):
    """Yield the base URL of a dashboard serving Settings(**settings)."""
    port = free_port()
    app = create_app(Settings(**settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", ws_ping_interval=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("dashboard server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
