"""fiber.config over strand: Fiber's settings, read as Fiber reads them (a
.fiberconfig file's [default] section in the working directory, then
FIBER_<KEY> variables, then init()'s arguments), as module attributes.

The ones that mean something here: backend and image (default_backend and
default_image when they are unset) become strand.init's defaults for new
pools, processes and managers ("kubernetes" is strand's "k8s"), and
cpu_per_job and mem_per_job size each Process as Fiber sizes its job
(strand's "resources": cpu, memory_mb), and each pool worker as its share
of a job Fiber would run cpu_per_job of them in, when set; use_push_queue
picks the kind of queue SimpleQueue() makes. The others (log_level, log_file,
debug, the ipc_* ports, ...) name parts of Fiber that
strand does not have: they are kept and shown, and setting one warns once
(docs/fiber.md says why each has no meaning here)."""

import os
import warnings

# logging's levels, by their values: every worker imports this module before
# its first task, and importing logging (5 ms) would only give these numbers.
LOG_LEVELS = {"notset": 0, "debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}

# Fiber's keys and defaults; those strand reads come first.
DEFAULTS = {
    "backend": None,
    "default_backend": "local",
    "image": None,
    "default_image": None,
    "cpu_per_job": 1,
    "mem_per_job": None,
    "debug": False,
    "log_level": LOG_LEVELS["info"],
    "log_file": "/tmp/fiber.log",
    "ipc_active": True,
    "ipc_admin_master_port": 0,
    "ipc_admin_worker_port": 8000,
    "kubernetes_namespace": "default",
    "use_push_queue": True,
    "merge_output": False,
    "use_bash": False,
}
MEANINGFUL = {"backend", "default_backend", "image", "default_image", "cpu_per_job", "mem_per_job", "use_push_queue"}
_warned = set()

globals().update(DEFAULTS)


class Config:
    """Settings as a file (conf_file, default .fiberconfig) and the
    environment give them, as Fiber's Config reads them; from_dict makes
    one of given values (get_object())."""

    def __init__(self, conf_file=None):
        self.__dict__.update(_read(conf_file or ".fiberconfig"))

    def __repr__(self):
        return repr(self.__dict__)

    @classmethod
    def from_dict(cls, kv):
        """A Config of Fiber's defaults with kv's values over them."""
        obj = cls.__new__(cls)
        obj.__dict__.update(DEFAULTS)
        obj.__dict__.update(kv)
        return obj


def _typed(key, value):
    """A value from a file or the environment (text) as its key's type."""
    if not isinstance(value, str):
        return value
    if key == "log_level":
        return LOG_LEVELS.get(value.lower(), LOG_LEVELS["notset"])
    if isinstance(DEFAULTS[key], bool):
        return value.strip().lower() in ("1", "true", "yes", "on")
    if key in ("cpu_per_job", "mem_per_job", "ipc_admin_master_port", "ipc_admin_worker_port"):
        return int(value)
    return value


def _read(conf_file=".fiberconfig"):
    """The settings a file and the environment give, as Fiber reads them."""
    values = dict(DEFAULTS)
    if os.path.exists(conf_file):
        import configparser

        parser = configparser.ConfigParser()
        parser.read(conf_file)
        for key in parser["default"] if "default" in parser else ():
            if key not in DEFAULTS:
                raise ValueError(
                    'unknown config key "%s" in %s. Valid keys: %s' % (key, conf_file, sorted(DEFAULTS))
                )
            values[key] = _typed(key, parser["default"][key])
    for key in DEFAULTS:
        given = os.environ.get("FIBER_" + key.upper())
        if given:
            values[key] = _typed(key, given)
    return values


def init(**kwargs):
    """Reads the settings again and sets kwargs over them (unknown keys are
    refused, as Fiber does); strand's defaults follow. Returns the keys
    whose values changed."""
    for key in kwargs:
        if key not in DEFAULTS:
            raise ValueError("unknown config key %r. Valid keys: %s" % (key, sorted(DEFAULTS)))
    values = _read()
    values.update({k: _typed(k, v) for k, v in kwargs.items()})
    changed = [k for k in DEFAULTS if globals()[k] != values[k]]
    globals().update(values)
    for key in changed:
        if key not in MEANINGFUL and values[key] != DEFAULTS[key] and key not in _warned:
            _warned.add(key)
            warnings.warn(
                "strand.fiber: config %r has no meaning on strand and is kept only to be read back (docs/fiber.md)"
                % key,
                stacklevel=3,
            )
    return changed


def get_dict():
    """The current settings, as a dict."""
    return {k: globals()[k] for k in DEFAULTS}


def get_object():
    """The current settings, as a Config."""
    return Config.from_dict(get_dict())


def _set_or_default(key):
    """key's value, else default_<key>'s when set away from Fiber's default,
    else None (the gateway's own default then holds)."""
    fallback = "default_" + key
    if globals()[key]:
        return globals()[key]
    return globals()[fallback] if globals()[fallback] != DEFAULTS[fallback] else None


def backend_name():
    """The strand backend these settings name, or None for the gateway's."""
    name = _set_or_default("backend")
    return {"kubernetes": "k8s"}.get(name, name)


def image_name():
    """The container image these settings name, or None for the gateway's."""
    return _set_or_default("image")


def resources(sharing=1):
    """The size these settings ask of a Fiber job (cpu_per_job CPUs,
    mem_per_job MiB), as the gateway's "resources", or {}: a Process's.
    sharing: how many pool workers Fiber runs in that job, each then sized
    as its share."""
    sizes = {}
    cpu, memory = globals()["cpu_per_job"], globals()["mem_per_job"]
    if cpu not in (None, DEFAULTS["cpu_per_job"]):
        share = cpu / sharing
        sizes["cpu"] = int(share) if share == int(share) else share
    if memory is not None:
        sizes["memory_mb"] = max(1, memory // sharing)
    return sizes


def workers_per_job(processes):
    """How many of a Pool's processes Fiber runs in one job: cpu_per_job of
    them, forked there (fewer in a smaller pool). processes None: the
    gateway's choice, taken to fill a job."""
    per_job = max(1, globals()["cpu_per_job"] or 1)
    return min(processes or per_job, per_job)
