"""Pool tasks that start processes of their own (python_fiber.py's
TaskChildren): multiprocessing children that use the queue and the
manager proxy their task was given, and programs run with subprocess.
A module of its own: a spawned child imports its target by name."""

import multiprocessing
import subprocess
import sys
import time


def child_puts(q, d, i):
    q.put(("child", i))
    d[i] = i * i


def with_children(args):
    q, d, method = args
    ctx = multiprocessing.get_context(method)
    children = [ctx.Process(target=child_puts, args=(q, d, i)) for i in range(2)]
    for c in children:
        c.start()
    for c in children:
        c.join()
    return [c.exitcode for c in children]


def with_subprocesses(_):
    subprocess.run([sys.executable, "-c", "print('from a subprocess')"], check=True)
    # Its stdin is /dev/null, not the runtime's frames: read gets nothing.
    subprocess.run(["sh", "-c", "echo from a shell; read line; echo read:$line."], check=True)
    return "done"


def send_later(writer):
    time.sleep(0.5)  # after its parent's function returned
    writer.send(b"from the child")


def leaves_a_child(writer):
    """A Process's function that starts a child and returns at once: the
    Process ends once the child did, as a multiprocessing parent's."""
    multiprocessing.get_context("spawn").Process(target=send_later, args=(writer,)).start()
