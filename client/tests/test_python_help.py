"""help() documents strand's whole public surface: every name in strand's
and strand.fiber's __all__ (and each Fiber module's), and every public
method and property of each class among them, has a docstring, which
pydoc shows under the method's name."""

import importlib
import inspect
import pydoc
import sys

MODULES = [
    "strand",
    "strand.fiber",
    "strand.fiber.config",
    "strand.fiber.experimental",
    "strand.fiber.managers",
    "strand.fiber.meta",
    "strand.fiber.pool",
    "strand.fiber.process",
    "strand.fiber.queues",
]
DUNDERS_DOCUMENTED = ("__enter__", "__exit__")


def public_members(cls):
    """(name, object) of cls's public methods and properties, its bases'
    included, those of object and the builtin exceptions left out (Python
    documents them)."""
    for name, value in inspect.getmembers(cls):
        if name.startswith("_") and name not in DUNDERS_DOCUMENTED:
            continue
        owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
        if owner is None or owner.__module__ == "builtins":
            continue
        if callable(value) or isinstance(inspect.getattr_static(cls, name), property):
            yield name, value


def undocumented():
    missing, seen = [], set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        if not (module.__doc__ or "").strip():
            missing.append(module_name)
        names = getattr(module, "__all__", None)
        if names is None:  # fiber.config: its own functions and classes
            names = [n for n, v in vars(module).items() if getattr(v, "__module__", None) == module_name]
            names = [n for n in names if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            where = "%s.%s" % (module_name, name)
            if inspect.ismodule(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            if not (inspect.getdoc(obj) or "").strip():
                missing.append(where)
            if inspect.isclass(obj):
                for member, value in public_members(obj):
                    if not (inspect.getdoc(value) or "").strip():
                        missing.append("%s.%s" % (where, member))
    return missing


def shown_by_help(cls):
    """The public methods whose docstring's first line help(cls) does not
    show after their name."""
    page = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    hidden = []
    for name, value in public_members(cls):
        doc = inspect.getdoc(value)
        if not doc:
            hidden.append(name)
            continue
        first = doc.splitlines()[0].strip()
        at = page.find(" |  %s" % name)
        if at < 0 or page.find(first, at) < 0:
            hidden.append(name)
    return hidden


def main():
    failures = 0
    missing = undocumented()
    if missing:
        print("FAIL without a docstring: %s" % ", ".join(missing))
        failures += 1
    else:
        print("ok   every public name, method and property has a docstring")
    import strand
    import strand.fiber

    for cls in (strand.Pool, strand.AsyncResult, strand.Process, strand.SimpleQueue, strand.SyncManager):
        hidden = shown_by_help(cls)
        if hidden:
            print("FAIL help(%s) does not show: %s" % (cls.__name__, ", ".join(hidden)))
            failures += 1
        else:
            print("ok   help(%s) shows every method's docstring" % cls.__name__)
    # What the test looks at is there: Pool's multiprocessing methods.
    expected = {"apply", "apply_async", "map", "map_async", "starmap", "starmap_async", "imap", "imap_unordered",
                "close", "terminate", "join", "__enter__", "__exit__"}
    found = {name for name, _ in public_members(strand.Pool)}
    if not expected <= found:
        print("FAIL Pool's methods seen: %s" % sorted(found))
        failures += 1
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
