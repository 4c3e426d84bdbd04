"""This process's id, kept: os.getpid() is a system call (1.7 us on a
virtual machine, two on every queue put or get, where a process checks
that the feeder or reader it holds is its own and not a forked parent's).
A child made by os.fork, and so by multiprocessing's fork, sets it again;
so does one a C extension forks, which CPython requires to call
PyOS_AfterFork_Child before it runs Python."""

import os

_pid = os.getpid()


def current():
    """os.getpid(), without the system call."""
    return _pid


def _forked():
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)
