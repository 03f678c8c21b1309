"""The dashboard under load and faults, against a real server in its own process on 127.0.0.1
(so that its memory, threads and open files are its own, read from /proc): 50 WebSocket clients
for 20 s, a client that never reads, 500 rapid connects and disconnects. Every loop is bounded
in count and time; the figures are printed. The 50 clients ran 60 s until the suite's 15-minute
budget (issue 41) took the time back: the rates, the real-time factor and the flat memory are
judged the same way over 20 s (RSS sampled every 2 s, not 5); memory over hours is the soak's
(tests/dashboard/test_dashboard_soak.py, benchmarks/bench_dashboard_soak.py)."""

import asyncio
import json
import math
import socket
import time

import pytest

from tests.conftest import require
from tests.support.dashboard_server import frames_in, get_json, proc_status, server_process

CLIENTS, DURATION_S = 50, 20.0
RSS_EVERY_S = 2.0  # the server's RSS sampled this often while the clients read
# memory is judged flat from this long after the clients connected (their figures are sent first)
FIGURES_SENT_S = 5.0
# The server publishes 30 frames/s to every client, but how many a client receives is what the
# CPU lets the server send and the readers read (a slow client gets the frames waiting for it
# merged, counted here as the frames they hold): measured 28.5 updates/s per client on the
# 2-core machine, 5.8 to 20 with two busy loops beside it. So the rates are judged against each
# other in the same run: every client gets at least MIN_SHARE of the mean client's frames (the
# server serves them fairly), and the floor MIN_RATE, generous on purpose, only says every
# stream lives.
MIN_SHARE = 0.8
MIN_RATE = 2.0  # updates/s
# The longest silence a reader accepts: a figure for 50 clients on a busy machine (their first
# views are built beside the stream) delays the frames by seconds; 30 s means a stream stopped.
SILENCE_S = 30.0


def ws_url(url):
    return url.replace("http://", "ws://") + "/ws/stream"


async def reader(url, seconds, counts, k, garbage=False):
    """A client reading for `seconds` after its first message; counts[k] = the runner frames
    its extend messages carried (frames_in: merged ones counted as the frames they hold)."""
    websockets = require("websockets")
    async with websockets.connect(url, max_size=None, ping_interval=None) as ws:
        await asyncio.wait_for(ws.recv(), 30)  # the figure
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            try:
                text = await asyncio.wait_for(ws.recv(), SILENCE_S)
            except asyncio.TimeoutError:
                pytest.fail(f"client {k}: no message for {SILENCE_S:.0f} s")
            counts[k] += frames_in(text)
            if garbage and counts[k] == 10:  # garbage is answered, the stream goes on
                await ws.send("this is not json {")
                await ws.send(json.dumps({"type": "control", "preset": {"joint1": 99}}))


def check_rates(rates):
    """Every client got its share of the frames (see MIN_SHARE) and the stream lived."""
    mean = sum(rates) / len(rates)
    assert min(rates) >= MIN_SHARE * mean, (min(rates), mean)
    assert min(rates) >= MIN_RATE, rates


async def sample_rss(pid, seconds, out, every=RSS_EVERY_S):
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        out.append(proc_status(pid)["rss_mb"])
        await asyncio.sleep(every)


@pytest.mark.slow
def test_fifty_clients_for_twenty_seconds():
    """Every client gets its share of the updates, the simulation keeps real time, memory stays
    flat."""
    with server_process() as (url, proc):
        counts, rss = [0] * CLIENTS, []

        async def main():
            readers = [
                reader(ws_url(url), DURATION_S, counts, k, garbage=k % 5 == 0)
                for k in range(CLIENTS)
            ]
            # memory from when every client is connected (the figures are sent first)
            await asyncio.gather(*readers, sample_rss(proc.pid, DURATION_S, rss))

        state0, wall0 = get_json(url + "/api/state"), time.monotonic()
        asyncio.run(main())
        state1, wall1 = get_json(url + "/api/state"), time.monotonic()
    # A machine that stops the server for more than the pacer's catch-up bound (a CI host under
    # other load; never seen on the 2-core development machine, lost = 0) loses that time by
    # design, and the server says how much: the rates and the real-time factor are taken over
    # the time the server was running. Losing a fifth of the run is a failure all the same.
    lost = state1["lost_s"] - state0["lost_s"]
    rates = [c / (DURATION_S - lost) for c in counts]
    rtf = (state1["time"] - state0["time"]) / (wall1 - wall0 - lost)
    print(
        f"{CLIENTS} clients, {DURATION_S:.0f} s: updates/s per client min {min(rates):.1f}, "
        f"mean {sum(rates) / len(rates):.1f}; real-time factor {rtf:.3f}; wall time lost to "
        f"stalls {lost:.2f} s; server RSS {', '.join(f'{r:.0f}' for r in rss)} MB (every "
        f"{RSS_EVERY_S:.0f} s)"
    )
    assert lost < 0.2 * DURATION_S
    check_rates(rates)
    assert rtf >= 0.95
    first = math.ceil(FIGURES_SENT_S / RSS_EVERY_S)  # flat once every figure is sent
    assert max(rss[first:]) - rss[first] < 30.0, rss


def raw_websocket(port, rcvbuf=4096):
    """A WebSocket handshake on a plain socket with a small receive buffer: a client that then
    never reads."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(
        f"GET /ws/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


@pytest.mark.slow
def test_a_client_that_never_reads():
    """Bounded: no memory growth, the other clients keep their share of the updates, and the
    server drops the stalled connection after client_stall_s (3 s here)."""
    stall_s, others, seconds = 3.0, 5, 12.0
    with server_process(env={"ASR_DASHBOARD_CLIENT_STALL_S": str(stall_s)}) as (url, proc):
        port = int(url.rsplit(":", 1)[1])
        before = proc_status(proc.pid)["rss_mb"]
        counts, rss, clients = [0] * others, [], []

        async def watch():
            t_end = time.monotonic() + seconds
            while time.monotonic() < t_end:
                clients.append(
                    (
                        time.monotonic() - t0,
                        (await asyncio.to_thread(get_json, url + "/api/state"))["clients"],
                    )
                )
                rss.append(proc_status(proc.pid)["rss_mb"])
                await asyncio.sleep(0.5)

        async def main():
            await asyncio.gather(
                *(reader(ws_url(url), seconds, counts, k) for k in range(others)), watch()
            )

        stalled = raw_websocket(port)
        t0 = time.monotonic()
        try:
            asyncio.run(main())
        finally:
            stalled.close()
    full = next(k for k, (_, n) in enumerate(clients) if n == others + 1)  # all connected
    dropped_at = next((t for t, n in clients[full:] if n == others), None)
    rates = [c / seconds for c in counts]
    print(
        f"never-reading client dropped after {dropped_at:.1f} s; others' updates/s min "
        f"{min(rates):.1f}; server RSS {before:.0f} MB before, max {max(rss):.0f} MB, end "
        f"{rss[-1]:.0f} MB"
    )
    assert dropped_at is not None and dropped_at < stall_s + 5.0
    check_rates(rates)
    assert max(rss) - before < 30.0


@pytest.mark.slow
def test_rapid_connects_and_disconnects_leak_nothing():
    """500 connections, some closed at once, some after reading the figure, some dropped in the
    middle of the handshake: afterwards no subscriber, thread or open file is left over."""
    websockets = require("websockets")
    n = 500
    # a 2 s plotted window keeps the figure each connection is sent small (10 s: 2.6 MB)
    with server_process(env={"ASR_DASHBOARD_WINDOW_S": "2"}) as (url, proc):
        port = int(url.rsplit(":", 1)[1])
        before = proc_status(proc.pid)

        async def one(k):
            if k % 5 == 0:  # TCP closed in the middle of the handshake
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.write(f"GET /ws/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
                w.close()
                return
            async with websockets.connect(
                ws_url(url), max_size=None, ping_interval=None, open_timeout=30
            ) as ws:
                if k % 2:
                    await asyncio.wait_for(ws.recv(), 30)

        async def main():
            for start in range(0, n, 10):  # 10 at a time
                await asyncio.wait_for(
                    asyncio.gather(*(one(k) for k in range(start, start + 10))), 60
                )

        t0 = time.monotonic()
        asyncio.run(main())
        elapsed = time.monotonic() - t0
        deadline = time.monotonic() + 10
        while get_json(url + "/api/state")["clients"] and time.monotonic() < deadline:
            time.sleep(0.2)
        after, left = proc_status(proc.pid), get_json(url + "/api/state")["clients"]
    print(
        f"{n} connects/disconnects in {elapsed:.1f} s: subscribers left {left}; threads "
        f"{before['threads']} -> {after['threads']}; open files {before['fds']} -> "
        f"{after['fds']}; RSS {before['rss_mb']:.0f} -> {after['rss_mb']:.0f} MB"
    )
    assert left == 0
    assert after["threads"] == before["threads"]
    assert after["fds"] <= before["fds"] + 2  # at most the connections still closing
    # memory: allocator warm-up only (a figure kept per connection would be 100 MB and more)
    assert after["rss_mb"] - before["rss_mb"] < 50.0
