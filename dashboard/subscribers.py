"""Per-client message buffers: what the runner thread publishes reaches each WebSocket client
through its own bounded Subscriber, filled on the client's event loop with
`loop.call_soon_threadsafe`; a slow client loses old `extend` frames first, and waiting
`figure` / `state` messages are replaced by newer ones; a client that reads slower than frames
come gets the frames waiting for it merged into one (merge_extends): fewer, fuller messages,
decimated, no gap in its plots."""

import asyncio
import bisect
import collections
import json

# Per-client adaptation (issue 46: a page on a busy machine fell behind and was dropped). When a
# client's sender asks for its next message while MERGE_FROM extend frames wait, the client
# reads slower than the runner publishes (its send-queue depth says so, per client): the frames
# waiting are merged into one extend message of at most MERGED_MAX_SAMPLES samples per trace
# (evenly in time, the first and the newest sample kept). A client taking 3 messages/s while 30
# frames/s are published gets 3 messages/s, each covering 10 frames: decimated by 10 for that
# client alone, without the gaps that dropping frames leaves; a client keeping up gets every
# frame as it is.
MERGED_MAX_SAMPLES = 50  # samples per trace in a merged extend message (the default max_samples)
# extend frames waiting when the sender asks, from which they are merged. Measured (load average
# 3-6, one run each unless said): from 2, compare of 8 under two busy loops drew 3.6-3.8
# updates/s on the page (4 runs), from 4 only 2.2-2.9 (3 runs); 50 fast clients got 7.4
# messages/s each from 2 (every one merged, all the samples in them) and 24.4 from 4, the
# real-time factor 1.000 in both. The page's rate is the goal here.
MERGE_FROM = 2


class Subscriber:
    """One client's message buffer on its event loop. put() runs on that loop (scheduled with
    call_soon_threadsafe). Bounded (max_items: Settings.client_queue), so a client that does
    not read costs no more memory than one that does: a figure or state message replaces the
    one of its kind still waiting (a figure also drops the frames before it), and beyond
    `max_items` the extend frames waiting are merged into one (merge_extends), then the oldest
    other message is dropped (never the figure; the merged extend last). get() hands out the extend
    frames waiting merged into one as well: the client reads slower than frames come. A new
    client's subscriber `awaits_figure`: its first view is built elsewhere (figure.FirstViews)
    while the frames after it queue up; get() hands out nothing before it, and put_first()
    puts it in front (unless a newer figure came first)."""

    COALESCED = ("figure", "state")

    def __init__(self, loop, max_items, awaits_figure=False):
        self.loop = loop
        self.max_items = max_items
        self.items = collections.deque()
        self.event = asyncio.Event()
        self.dropped = 0
        self.merges = 0  # merged extend messages made for this client (merge_extends)
        self.closed = False
        self.awaits_figure = awaits_figure

    def put_first(self, text):
        if self.awaits_figure:
            self.awaits_figure = False
            self.items.appendleft(("figure", text))
            self.event.set()

    def put_first_threadsafe(self, text):
        if not self.closed:
            try:
                self.loop.call_soon_threadsafe(self.put_first, text)
            except RuntimeError:  # loop closed
                self.closed = True

    def put(self, kind, text):
        if kind == "figure":
            self.awaits_figure = False
        if kind in self.COALESCED:
            stale = ("extend", "figure") if kind == "figure" else (kind,)
            kept = collections.deque(i for i in self.items if i[0] not in stale)
            self.dropped += len(self.items) - len(kept)
            self.items = kept
        self.items.append((kind, text))
        if len(self.items) > self.max_items:
            self._merge_waiting()
        while len(self.items) > self.max_items:
            self._drop_oldest()
        self.event.set()

    def _merge_waiting(self):
        """The extend frames waiting merged into one (merge_extends), where the first of them
        was: a client over its bound keeps every frame's span, decimated, instead of losing the
        oldest frames."""
        positions = [k for k, (kind, _) in enumerate(self.items) if kind == "extend"]
        if len(positions) < 2:
            return
        text, n = merge_extends([self.items[k][1] for k in positions])
        self.merges += 1
        self.dropped += len(positions) - n  # another run's frames, stale
        first = positions[0]
        self.items = collections.deque(
            ("extend", text) if k == first else item
            for k, item in enumerate(self.items)
            if k == first or item[0] != "extend"
        )

    def _drop_oldest(self):
        """Drop the oldest message other than a figure and the extend frames (merged already:
        one message holds their span), else the oldest extend."""
        kinds = [i[0] for i in self.items]
        victim = next(
            (k for k, kind in enumerate(kinds) if kind not in ("figure", "extend")),
            kinds.index("extend") if "extend" in kinds else None,
        )
        del self.items[victim]
        self.dropped += 1

    async def get(self):
        """Next (kind, text) message; an extend frame with the other extend frames waiting
        behind it merged in when they are MERGE_FROM or more (merge_extends: the client reads
        slower than frames come)."""
        while self.awaits_figure or not self.items:
            self.event.clear()
            await self.event.wait()
        if self.items[0][0] == "extend":
            waiting = sum(kind == "extend" for kind, _ in self.items)
            if waiting >= MERGE_FROM:
                self._merge_waiting()
        return self.items.popleft()


def merge_extends(texts, max_samples=MERGED_MAX_SAMPLES):
    """(one extend message text, messages joined in it) of the extend message texts `texts`,
    oldest first (PROTOCOL.md "WebSocket"): the frames of the newest frame's run and traces
    (others, stale, are left out) with each trace's x and y joined in order and cut to at most
    `max_samples` samples evenly spread in time (_even_in_time: the first and newest kept);
    `clamped` the joints clamped in any of them; t, frame, maxPoints, scene_id and robot3d the
    newest's (the ghost, target and target_q of the newest frame that carries them when the
    newest does not: they come every few frames); "merged": the number of runner frames it
    holds (a merged message counts its own). A single text, or texts that are not extend
    messages as expected, come back as the newest alone."""
    if len(texts) == 1:
        return texts[0], 1
    try:
        msgs = [json.loads(t) for t in texts]
        new = msgs[-1]
        same = [
            m
            for m in msgs
            if m.get("run_id") == new.get("run_id") and m.get("indices") == new.get("indices")
        ]
        xs = [m["update"]["x"] for m in same]
        ys = [m["update"]["y"] for m in same]
        n_traces = len(new["indices"])
        joined_x = [[v for x in xs for v in x[k]] for k in range(n_traces)]
        joined_y = [[v for y in ys for v in y[k]] for k in range(n_traces)]
    except (ValueError, KeyError, TypeError, IndexError):
        return texts[-1], 1
    keep = _even_in_time(joined_x[0] if joined_x else [], max_samples)
    out = dict(new)
    out["update"] = {
        "x": [[x[i] for i in keep] for x in joined_x],
        "y": [[y[i] for i in keep] for y in joined_y],
    }
    clamped = []
    for m in same:
        clamped += [j for j in m.get("clamped") or () if j not in clamped]
    out["clamped"] = clamped
    robot3d = new.get("robot3d")
    if isinstance(robot3d, dict) and "ghost" not in robot3d:
        ghost = next(
            (m["robot3d"] for m in reversed(same) if "ghost" in (m.get("robot3d") or {})), None
        )
        if ghost is not None and ghost is not robot3d:
            extra = {k: ghost[k] for k in ("ghost", "target", "target_q") if k in ghost}
            out["robot3d"] = {**robot3d, **extra}
    out["merged"] = sum(int(m.get("merged", 1)) for m in same)
    return json.dumps(out, separators=(",", ":"), allow_nan=False), len(same)


def _even_in_time(t, max_samples):
    """Indices of at most `max_samples` of the increasing times `t` (s), the first and the last
    among them, the others the nearest after each of evenly spaced times between: a span merged
    again and again keeps its start and an even density, however often it is merged."""
    n = len(t)
    if n <= max_samples:
        return range(n)
    try:
        t0, t1 = float(t[0]), float(t[-1])
        grid = [t0 + (t1 - t0) * k / (max_samples - 1) for k in range(max_samples)]
        keep = sorted({min(n - 1, bisect.bisect_left(t, g)) for g in grid} | {0, n - 1})
    except (TypeError, ValueError):  # not numbers: evenly by index
        keep = sorted({round(k * (n - 1) / (max_samples - 1)) for k in range(max_samples)})
    return keep


def publish_threadsafe(subscribers, kind, text):
    """Put (kind, text) into every open subscriber from another thread, with one wake-up of
    each event loop for all of its subscribers (fifty clients on one loop cost one cross-thread
    call per frame, not fifty). Returns the subscribers to forget: those closed already and
    those whose loop is closed (marked closed)."""
    dead, by_loop = [], {}
    for s in subscribers:
        (dead if s.closed else by_loop.setdefault(id(s.loop), [])).append(s)
    for group in by_loop.values():
        try:
            group[0].loop.call_soon_threadsafe(_put_all, group, kind, text)
        except RuntimeError:  # loop closed
            for s in group:
                s.closed = True
            dead += group
    return dead


def _put_all(subscribers, kind, text):
    for s in subscribers:
        if not s.closed:
            s.put(kind, text)
