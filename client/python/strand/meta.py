"""strand.meta: what a function needs where it runs, as fiber.meta.

    @strand.meta(cpu=2, memory=1024, gpu=1)      # cores, MiB, GPUs
    def train(q): ...

A Process whose target carries it asks its backend for those resources
(the gateway's "resources": cpu, memory_mb, gpu). A Pool's workers are
sized when the pool is made (strand.Pool(cpu=, memory=, gpu=)), before any
function is known, so a Pool does not read it."""

ATTRIBUTE = "__strand_meta__"


def meta(cpu=None, memory=None, gpu=None):
    """A decorator: a function marked with what it needs where it runs (cpu
    cores, memory in MiB, gpu GPUs), which a Process whose target it is asks
    its backend for."""
    def mark(func):
        wants = {}
        if cpu is not None:
            wants["cpu"] = cpu
        if memory is not None:
            wants["memory_mb"] = int(memory)
        if gpu is not None:
            wants["gpu"] = int(gpu)
        setattr(func, ATTRIBUTE, wants)
        return func

    return mark


def resources_of(func):
    """The resources a function was marked with, or None."""
    wants = getattr(func, ATTRIBUTE, None)
    return dict(wants) if wants else None
