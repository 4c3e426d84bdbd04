"""strand._pid keeps the process's id without a system call: it must be
the child's own in every child that runs Python, or a forked child would
use its parent's connection, feeder and reader."""

import multiprocessing
import os
import unittest

from strand import _pid


def report(conn):
    conn.send((_pid.current(), os.getpid()))


class PidTest(unittest.TestCase):
    def test_the_parent_s_own(self):
        self.assertEqual(_pid.current(), os.getpid())

    def test_a_child_of_os_fork(self):
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            os.write(write, b"%d %d" % (_pid.current(), os.getpid()))
            os._exit(0)
        os.close(write)
        kept, real = map(int, os.read(read, 64).split())
        os.waitpid(child, 0)
        os.close(read)
        self.assertEqual(kept, real)
        self.assertEqual(kept, child)
        self.assertEqual(_pid.current(), os.getpid())

    def test_children_of_each_multiprocessing_start_method(self):
        for method in ("fork", "forkserver", "spawn"):
            context = multiprocessing.get_context(method)
            ours, theirs = context.Pipe()
            child = context.Process(target=report, args=(theirs,))
            child.start()
            kept, real = ours.recv()
            child.join(30)
            self.assertEqual((kept, real), (child.pid, child.pid), method)


if __name__ == "__main__":
    unittest.main()
