"""The caller's code, shipped to the workers as multiprocessing's children
find it on the same machine: the working directory (its modules and its
data files, read by relative paths) and the modules the program imported
from anywhere else outside the interpreter's own library.

They travel as one zip, built the same way from the same files (sorted
names, fixed dates and modes) so that its name, the SHA-256 of its bytes,
says what it holds: the gateway stores it once (PUT /v1/code/{sha256}),
each worker fetches it once from the hub and runs its tasks in it, and
the next program with the same files uploads nothing. Nor does it zip
them again: the package's name is kept (in STRAND_CACHE_DIR, else
~/.cache/strand, packages/) under a fingerprint of its files' names,
sizes, inodes and times.

strand.init(working_dir=..., py_modules=[...], excludes=[...]) chooses what
goes: working_dir=None sends no folder. Left out always: the top-level
.gitignore's patterns (a project's build outputs), DEFAULT_EXCLUDES (caches,
version control, virtual environments, and a gateway's own files: its
token and database must never reach a task)."""

import fnmatch
import io
import os
import site
import stat
import sys

# hashlib, sysconfig and zipfile are imported where a package is made: a
# program's modules import strand on every worker too, where these were 26
# ms of a runtime's start (python3 -X importtime), and no worker makes one.

MODULES_DIR = ".strand-py-modules"  # in the zip: modules from outside the folder (worker/code.h)
DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    "*.pyc",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    "node_modules",
    "strand.token",
    "*.db",
    "*.db-wal",
    "*.db-shm",
    "*.db.logs",
    "strand-code",
    "slurm-output",
)
_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest a zip holds: the same bytes on every run
_NEVER_SHIPPED = ("strand", "cloudpickle")  # every worker has them


class CodeTooLarge(ValueError):
    pass


def _library_roots():
    """Where the interpreter's own modules live: its standard library and
    site-packages, and every lib folder of its prefixes."""
    import sysconfig

    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        for lib in ("lib", "lib64", "local/lib"):
            roots.add(os.path.join(prefix, lib))
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except AttributeError:  # a virtualenv's old site module
        pass
    return [os.path.realpath(r) + os.sep for r in roots]


def _folder(working_dir):
    """The working directory as a real path, or None for none."""
    return os.path.realpath(os.path.expanduser(working_dir)) if working_dir else None


def _imported_from_outside(working_dir):
    """The top-level modules and packages imported from elsewhere than the
    working directory's top and the interpreter's library: their files or
    folders."""
    roots = _library_roots()
    found = {}
    for name, module in list(sys.modules.items()):
        if "." in name or name == "__main__" or name in _NEVER_SHIPPED:
            continue
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None) if spec else None
        if not origin or not os.path.isabs(origin):
            continue  # built in, frozen or a namespace package
        origin = os.path.realpath(origin)
        if any(origin.startswith(root) for root in roots):
            continue
        locations = getattr(spec, "submodule_search_locations", None)
        path = os.path.dirname(origin) if locations else origin
        if working_dir and os.path.dirname(path) == working_dir:
            continue  # at the folder's top: imported from there
        found[name] = path
    return found


def _gitignore(folder):
    """The patterns of folder's own .gitignore (not its negations)."""
    try:
        with open(os.path.join(folder, ".gitignore")) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "!"))]


def _excluded(relative, name, is_dir, patterns):
    for pattern in patterns:
        if pattern.endswith("/"):
            if not is_dir:
                continue
            pattern = pattern.rstrip("/")
        if pattern.startswith("/") or "/" in pattern.rstrip("/"):
            if fnmatch.fnmatchcase(relative, pattern.lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


class _Plan:
    """What the package holds, in order: (path, name in the zip, its
    stat), within max_bytes of file contents."""

    def __init__(self, max_bytes, what):
        self.entries = []
        self.max_bytes = max_bytes
        self.total = 0
        self.what = what

    def add(self, path, arcname):
        st = os.stat(path)
        self.total += st.st_size
        if self.max_bytes is not None and self.total > self.max_bytes:
            raise CodeTooLarge(
                "strand: %s holds over %d bytes to ship to the workers (the gateway's --max-code-bytes): "
                "name less with strand.init(working_dir=..., excludes=[...]), or ship no folder with "
                "strand.init(working_dir=None)" % (self.what, self.max_bytes)
            )
        self.entries.append((path, arcname, st))

    def add_tree(self, folder, prefix, patterns):
        for top, dirs, files in os.walk(folder):
            relative_top = os.path.relpath(top, folder)
            relative_top = "" if relative_top == "." else relative_top + "/"
            dirs[:] = sorted(
                d
                for d in dirs
                if not os.path.islink(os.path.join(top, d)) and not _excluded(relative_top + d, d, True, patterns)
            )
            for name in sorted(files):
                path = os.path.join(top, name)
                if _excluded(relative_top + name, name, False, patterns) or not os.path.isfile(path):
                    continue
                self.add(path, prefix + relative_top + name)

    def fingerprint(self):
        """What names these files as they are now: each one's name in the
        zip, size, mode, inode and times (a write changes its ctime, which
        nothing sets back), and the zip's format."""
        import hashlib

        h = hashlib.sha256(b"strand-code-1")
        for _, arcname, st in self.entries:
            h.update(
                ("\0%s\0%d %d %d %d %d %d" % (arcname, st.st_size, st.st_mode, st.st_dev, st.st_ino,
                                              st.st_mtime_ns, st.st_ctime_ns)).encode("utf-8", "surrogateescape")
            )
        return h.hexdigest()

    def pack(self):
        """The zip's bytes: the same bytes for the same files (sorted names,
        fixed dates and modes)."""
        import zipfile

        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
            for path, arcname, st in self.entries:
                info = zipfile.ZipInfo(arcname, _DATE)
                info.create_system = 3  # unix: the mode below is read
                info.external_attr = (0o755 if st.st_mode & stat.S_IXUSR else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(path, "rb") as f:
                    package.writestr(info, f.read())
        return buffer.getvalue()


def _plan(working_dir, py_modules=None, excludes=None, max_bytes=None):
    """The package's files: working_dir's at its root, and under
    MODULES_DIR the modules imported from elsewhere and py_modules (module
    objects or paths of a module file or a package folder)."""
    folder = _folder(working_dir)
    if folder and not os.path.isdir(folder):
        raise ValueError("strand: the working_dir %s is not a folder" % working_dir)
    patterns = list(DEFAULT_EXCLUDES) + list(excludes or ())
    plan = _Plan(max_bytes, "the working directory %s" % folder if folder else "the modules to ship")
    if folder:
        plan.add_tree(folder, "", patterns + _gitignore(folder))
    modules = _imported_from_outside(folder)
    for module in py_modules or ():
        path = getattr(module, "__file__", None) or module
        path = os.path.realpath(os.path.expanduser(path))
        if os.path.basename(path) == "__init__.py":
            path = os.path.dirname(path)
        modules[os.path.basename(path)] = path
    for name in sorted(modules):
        path = modules[name]
        if os.path.isdir(path):
            plan.add_tree(path, "%s/%s/" % (MODULES_DIR, os.path.basename(path)), patterns)
        elif os.path.isfile(path):
            plan.add(path, "%s/%s" % (MODULES_DIR, os.path.basename(path)))
    return plan


def build(working_dir, py_modules=None, excludes=None, max_bytes=None):
    """The package's bytes (_plan's files); None when there is nothing to
    ship."""
    plan = _plan(working_dir, py_modules, excludes, max_bytes)
    return plan.pack() if plan.entries else None


# The packages built before, by their files' fingerprint: a program's
# first pool zipped its folder every run (bench/python's, 442 files: 126 of
# the first pool's 164 ms, cProfile); now only when a file changed.
PACKAGES_KEPT = 256


def _packages_dir():
    base = os.environ.get("STRAND_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "strand")
    return os.path.join(base, "packages")


def _remembered(fingerprint):
    try:
        with open(os.path.join(_packages_dir(), fingerprint)) as f:
            name = f.read().strip()
    except OSError:
        return None
    return name if len(name) == 64 and all(c in "0123456789abcdef" for c in name) else None


def _remember(fingerprint, name):
    """Best effort: a cache that cannot be written only costs a zip."""
    folder = _packages_dir()
    try:
        os.makedirs(folder, 0o700, exist_ok=True)
        temp = os.path.join(folder, ".%s.%d" % (fingerprint, os.getpid()))
        with open(temp, "w") as f:
            f.write(name)
        os.replace(temp, os.path.join(folder, fingerprint))
        kept = os.listdir(folder)
        if len(kept) > PACKAGES_KEPT:
            by_age = sorted(kept, key=lambda n: os.stat(os.path.join(folder, n)).st_mtime)
            for old in by_age[: len(kept) - PACKAGES_KEPT]:
                os.unlink(os.path.join(folder, old))
    except OSError:
        pass


def _held(gw, name):
    """Whether gw holds the package name."""
    from .gateway import StrandError

    try:
        gw.request("GET", "/v1/code/" + name)
        return True
    except StrandError as e:
        if e.status != 404:
            raise
        return False


def ensure(gw):
    """The SHA-256 of the caller's package, uploaded to gw unless it holds
    it already; None when there is nothing to ship. Looked at once per
    gateway object and process, and again once the program imported
    modules from outside since (a module imported after the first pool was
    made is shipped to the next); zipped only when its files are not those
    of a package this user's cache remembers."""
    working_dir = getattr(gw, "working_dir", ".")
    cached = getattr(gw, "_code", None)
    if cached is not None and cached[0] == os.getpid():
        if cached[2] == len(sys.modules):
            return cached[1]
        outside = _imported_from_outside(_folder(working_dir))
        if outside == cached[3]:
            gw._code = cached[:2] + (len(sys.modules), outside)
            return cached[1]
    max_bytes = gw.request("GET", "/v1/code")["max_bytes"]
    plan = _plan(working_dir, getattr(gw, "py_modules", None), getattr(gw, "excludes", None), max_bytes)
    name = None
    if plan.entries:
        fingerprint = plan.fingerprint()
        name = _remembered(fingerprint)
        if name is None or not _held(gw, name):
            import hashlib

            data = plan.pack()
            name = hashlib.sha256(data).hexdigest()
            if not _held(gw, name):
                gw.request_bytes("PUT", "/v1/code/" + name, data, "application/zip", timeout=600)
            _remember(fingerprint, name)
    gw._code = (os.getpid(), name, len(sys.modules), _imported_from_outside(_folder(working_dir)))
    return name
