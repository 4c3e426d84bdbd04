"""What a pool's tasks (or a manager's methods) print, shown in the program
that submitted them,
as multiprocessing's children share their parent's terminal: each line on
this program's sys.stdout or sys.stderr (as the task wrote it), after its
worker's id, as Ray does: "(w-7c958b22fec111e1) hello 3".

A daemon thread follows the pool (GET /v1/pools/{id}/logs?wait=, a long
poll) so lines come as they are printed; drain() catches up at once, and
the pool calls it when a map returns and when it ends, and at the
program's exit, so that every line a task printed before its result is
shown before the program goes on or ends. Lines are shown once each, by
their number, whichever reader got them first. While the program follows
a pool (its reads name the program's lease), the pool's workers wait for
it rather than print past the newest lines the gateway keeps, as a child
waits on a full pipe; lines gone all the same (the program stopped
reading for a while) are said to be gone where they were."""

import atexit
import sys
import threading

from .gateway import StrandError

FOLLOW_WAIT_S = 5
# Lines a page: a chatty pool is read in few requests, and a page shows
# well within the minute after which the gateway no longer holds the
# pool's workers back for this program (a terminal at 40 lines a second).
PAGE_LINES = 2000


class Output:
    def __init__(self, gw, pool_id, kind="pools", lease=None):
        """kind: "pools", or "managers" for a manager's (its id's); lease:
        the program's lease the pool was made under, which its reads name:
        the pool's workers then wait for this program rather than print
        past what the gateway keeps of lines it has not shown."""
        self.gw, self.pool_id, self.kind = gw, pool_id, kind
        self.lease = "&lease=" + lease if lease else ""
        self.shown = 0  # the number of the last line shown
        self.lock = threading.Lock()
        self.ended = threading.Event()
        threading.Thread(target=self._follow, name="strand-output-" + pool_id, daemon=True).start()
        atexit.register(self.drain)

    def _page(self, wait):
        return self.gw.request(
            "GET",
            "/v1/%s/%s/logs?after=%d&limit=%d&wait=%d%s"
            % (self.kind, self.pool_id, self.shown, PAGE_LINES, wait, self.lease),
            timeout=wait + 30,
        )

    def _show(self, page):
        with self.lock:
            if page.get("missed") and page["lines"] and page["lines"][-1]["seq"] > self.shown:
                sys.stderr.write(
                    "(strand) lines of %s were gone before they could be shown: "
                    "the gateway keeps each one's newest 10,000\n" % self.pool_id
                )
            for line in page["lines"]:
                if line["seq"] <= self.shown:
                    continue  # the other reader showed it
                stream = sys.stderr if line["stream"] == "stderr" else sys.stdout
                stream.write("(%s) %s\n" % (line["worker"], line["text"]))
                self.shown = line["seq"]
            sys.stdout.flush()
        return len(page["lines"])

    def _follow(self):
        while not self.ended.is_set():
            try:
                self._show(self._page(FOLLOW_WAIT_S))
            except (StrandError, OSError, ValueError):
                self.ended.wait(1)  # the gateway restarts, or the pool is gone

    def drain(self, upto=None):
        """Shows every line stored now; with upto (a line's number, as a
        results page's output_last gives it), asks only if a line up to it
        was not shown yet."""
        if upto is not None:
            with self.lock:  # the follower may be showing them: once it has
                if self.shown >= upto:
                    return
        try:
            while self._show(self._page(0)):
                pass
        except (StrandError, OSError, ValueError):
            pass

    def end(self):
        self.drain()
        self.ended.set()
