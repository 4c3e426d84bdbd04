"""The caller's code, shipped to the workers as multiprocessing's children
find it on the same machine: the working directory (its modules and its
data files, read by relative paths) and the modules the program imported
from anywhere else outside the interpreter's own library.

They travel as one zip, built the same way from the same files (sorted
names, fixed dates and modes) so that its name, the SHA-256 of its bytes,
says what it holds: the gateway stores it once (PUT /v1/code/{sha256}),
each worker fetches it once from the hub and runs its tasks in it, and
the next program with the same files uploads nothing.

strand.init(working_dir=..., py_modules=[...], excludes=[...]) chooses what
goes: working_dir=None sends no folder. Left out always: the top-level
.gitignore's patterns (a project's build outputs), DEFAULT_EXCLUDES (caches,
version control, virtual environments, and a gateway's own files: its
token and database must never reach a task)."""

import fnmatch
import hashlib
import io
import os
import site
import stat
import sys
import sysconfig
import zipfile

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


class _Zip:
    """The package being built, within max_bytes of file contents."""

    def __init__(self, max_bytes, what):
        self.buffer = io.BytesIO()
        self.zip = zipfile.ZipFile(self.buffer, "w", zipfile.ZIP_DEFLATED)
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
        info = zipfile.ZipInfo(arcname, _DATE)
        info.create_system = 3  # unix: the mode below is read
        info.external_attr = (0o755 if st.st_mode & stat.S_IXUSR else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        with open(path, "rb") as f:
            self.zip.writestr(info, f.read())

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

    def close(self):
        self.zip.close()
        return self.buffer.getvalue()


def build(working_dir, py_modules=None, excludes=None, max_bytes=None):
    """The package's bytes: working_dir's files at its root, and under
    MODULES_DIR the modules imported from elsewhere and py_modules (module
    objects or paths of a module file or a package folder). None when there
    is nothing to ship."""
    folder = _folder(working_dir)
    if folder and not os.path.isdir(folder):
        raise ValueError("strand: the working_dir %s is not a folder" % working_dir)
    patterns = list(DEFAULT_EXCLUDES) + list(excludes or ())
    package = _Zip(max_bytes, "the working directory %s" % folder if folder else "the modules to ship")
    if folder:
        package.add_tree(folder, "", patterns + _gitignore(folder))
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
            package.add_tree(path, "%s/%s/" % (MODULES_DIR, os.path.basename(path)), patterns)
        elif os.path.isfile(path):
            package.add(path, "%s/%s" % (MODULES_DIR, os.path.basename(path)))
    if not package.zip.namelist():
        return None
    return package.close()


def ensure(gw):
    """The SHA-256 of the caller's package, uploaded to gw unless it holds
    it already; None when there is nothing to ship. Built once per
    gateway object and process, and again once the program imported
    modules from outside since (a module imported after the first pool was
    made is shipped to the next)."""
    working_dir = getattr(gw, "working_dir", ".")
    cached = getattr(gw, "_code", None)
    if cached is not None and cached[0] == os.getpid():
        if cached[2] == len(sys.modules):
            return cached[1]
        outside = _imported_from_outside(_folder(working_dir))
        if outside == cached[3]:
            gw._code = cached[:2] + (len(sys.modules), outside)
            return cached[1]
    from .gateway import StrandError

    max_bytes = gw.request("GET", "/v1/code")["max_bytes"]
    data = build(working_dir, getattr(gw, "py_modules", None), getattr(gw, "excludes", None), max_bytes)
    name = hashlib.sha256(data).hexdigest() if data else None
    if name:
        try:
            gw.request("GET", "/v1/code/" + name)
        except StrandError as e:
            if e.status != 404:
                raise
            gw.request_bytes("PUT", "/v1/code/" + name, data, "application/zip", timeout=600)
    gw._code = (os.getpid(), name, len(sys.modules), _imported_from_outside(_folder(working_dir)))
    return name
