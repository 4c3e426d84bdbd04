"""Waiting by asking again and again, where the one asked cannot wait for
us: a managed queue's get or a lock's acquire (a manager runs one call at
a time, so a call that waited inside it would hold up the one it waits
for) and a task's poll of a pipe end (a task's calls go through its
worker, and a recv that waited would take the message)."""

import time

FIRST_S = 0.001
SHORT_MAX_S = 0.05
LONG_MAX_S = 1.0


def until(attempt, timeout):
    """attempt() again and again until it returns (True, result), or until
    timeout seconds pass (None: no limit; 0 or less: one attempt):
    (True, result), or (False, None). The pause grows from FIRST_S to
    SHORT_MAX_S, then to a twentieth of the time waited so far, up to
    LONG_MAX_S: each ask is a call to the gateway (a manager's, a job it
    records), so one that waits an hour makes some 3,700 of them, not
    72,000, and what came after a long wait is seen within a second."""
    began = time.monotonic()
    deadline = None if timeout is None else began + timeout
    pause = FIRST_S
    while True:
        done, result = attempt()
        if done:
            return True, result
        now = time.monotonic()
        if deadline is not None:
            if now >= deadline:
                return False, None
            pause = min(pause, deadline - now)
        time.sleep(pause)
        pause = min(2 * pause, max(SHORT_MAX_S, min(LONG_MAX_S, (now - began) / 20)))
