"""Per-client message buffers: what the runner thread publishes reaches each WebSocket client
through its own bounded Subscriber, filled on the client's event loop with
`loop.call_soon_threadsafe`; a slow client loses old `extend` frames first, and waiting
`figure` / `state` messages are replaced by newer ones."""

import asyncio
import collections


class Subscriber:
    """One client's message buffer on its event loop. put() runs on that loop (scheduled with
    call_soon_threadsafe). Bounded (max_items: Settings.client_queue), so a client that does
    not read costs no more memory than one that does: a figure or state message replaces the
    one of its kind still waiting (a figure also drops the frames before it), and beyond
    `max_items` the oldest extend frames (or else the oldest other message, never the figure)
    are dropped. A new client's subscriber `awaits_figure`: its first view is built elsewhere
    (figure.FirstViews) while the frames after it queue up; get() hands out nothing before it,
    and put_first() puts it in front (unless a newer figure came first)."""

    COALESCED = ("figure", "state")

    def __init__(self, loop, max_items, awaits_figure=False):
        self.loop = loop
        self.max_items = max_items
        self.items = collections.deque()
        self.event = asyncio.Event()
        self.dropped = 0
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
        while len(self.items) > self.max_items:
            self._drop_oldest()
        self.event.set()

    def _drop_oldest(self):
        kinds = [i[0] for i in self.items]
        victim = (
            kinds.index("extend")
            if "extend" in kinds
            else next(k for k, kind in enumerate(kinds) if kind != "figure")
        )
        del self.items[victim]
        self.dropped += 1

    async def get(self):
        """Next (kind, text) message."""
        while self.awaits_figure or not self.items:
            self.event.clear()
            await self.event.wait()
        return self.items.popleft()


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
