"""What a Process prints, shown in the program that started it, as a pool's
tasks' output is (output.py): each line after the process's id, as
"(r-5f0e33c1d2a4b6e8) Hello, Fiber!", on the program's stdout or stderr
as the process wrote it.

The process sends its lines through a queue of its own (Sender): its
sys.stdout and sys.stderr, still written to its log as before, are
gathered a line at a time and put in batches, at most FLUSH_S apart, and
an end mark once run() returned. The program follows the queue with a
daemon thread (Receiver); join() waits for the end mark (FINISH_S at most:
a process killed sends none), so every line printed comes before join()
returns, and the queue is then removed."""

import atexit
import io
import sys
import threading

FLUSH_S = 0.1
FINISH_S = 5
POLL_S = 1  # how soon the program's thread notices the process ended without an end mark
END = None

_print_lock = threading.Lock()


class _Tee(io.TextIOBase):
    """A stream that writes to stream and gives its text to sender."""

    def __init__(self, stream, number, sender):
        super().__init__()
        self.stream, self.number, self.sender = stream, number, sender

    @property
    def encoding(self):
        return getattr(self.stream, "encoding", "utf-8")

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        self.stream.write(text)
        self.sender.add(self.number, text)
        return len(text)

    def flush(self):
        self.stream.flush()


class Sender:
    """In the process: its prints, a line at a time, into queue."""

    def __init__(self, queue):
        self.queue = queue
        self.lock = threading.Lock()  # the lines gathered
        self.sending = threading.Lock()  # one put at a time: batches stay in order
        self.partial = {1: "", 2: ""}
        self.lines = []
        self.stdout, self.stderr = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(self.stdout, 1, self), _Tee(self.stderr, 2, self)
        self.closed = threading.Event()
        threading.Thread(target=self._flush_often, name="strand-process-output", daemon=True).start()

    def add(self, number, text):
        with self.lock:
            *complete, self.partial[number] = (self.partial[number] + text).split("\n")
            self.lines.extend((number, line) for line in complete)

    def _send(self):
        with self.sending:
            with self.lock:
                lines, self.lines = self.lines, []
            if lines:
                self.queue.put(lines)

    def _flush_often(self):
        while not self.closed.wait(FLUSH_S):
            self._send()

    def close(self):
        """run() returned: the last lines, and the end mark."""
        sys.stdout, sys.stderr = self.stdout, self.stderr
        self.closed.set()
        with self.lock:
            for number in (1, 2):
                if self.partial[number]:
                    self.lines.append((number, self.partial[number]))
                    self.partial[number] = ""
        self._send()
        self.queue.put(END)


class Receiver:
    """In the program: shows what the process pid sends on queue."""

    def __init__(self, queue, pid):
        self.queue, self.pid = queue, pid
        self.ended = False  # the process has ended: an empty wait is the last
        self.done = threading.Event()
        threading.Thread(target=self._show, name="strand-output-" + pid, daemon=True).start()
        atexit.register(self.finish, False)  # one still running at the exit is not waited for

    def _show(self):
        from .gateway import StrandError

        try:
            while True:
                try:
                    batch = self.queue.get(timeout=POLL_S)
                except TimeoutError:
                    if self.ended:
                        return
                    continue
                if batch is END:
                    return
                with _print_lock:
                    for number, text in batch:
                        stream = sys.stderr if number == 2 else sys.stdout
                        stream.write("(%s) %s\n" % (self.pid, text))
                    sys.stdout.flush()
        except (StrandError, OSError, ValueError):
            return  # the gateway restarts, or the queue is gone
        finally:
            self.done.set()

    def finish(self, wait=True):
        """The process ended: its last lines shown (wait: for up to
        FINISH_S), then its queue removed."""
        if self.ended:
            return
        self.ended = True
        if wait:
            self.done.wait(FINISH_S)
        try:
            self.queue._remove()
        except Exception:
            pass  # the gateway is gone: its queue with it, or kept for nobody
