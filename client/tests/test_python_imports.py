"""What importing strand.fiber costs a worker: a program's modules import it
on every worker before their first task, so it loads none of what only the
caller needs (making a code package, TLS, Fiber's config file, logging)
until it is used. Each check runs in an interpreter of its own, and the
names that come at first use are those of Fiber's surface, the same
objects however they are reached."""

import subprocess
import sys
import unittest

# What the caller alone needs: making a code package (zipfile, hashlib,
# sysconfig), an https gateway (ssl), a .fiberconfig file (configparser),
# uploads (concurrent.futures), a gateway URL (urllib.parse).
CALLER_ONLY = ("zipfile", "hashlib", "sysconfig", "ssl", "configparser", "concurrent.futures", "urllib.parse")


def loaded_after(statement, modules):
    """Which of modules a fresh interpreter holds after statement."""
    probe = "import sys\n%s\nprint(' '.join(m for m in %r if m in sys.modules))" % (statement, modules)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return out.split()


class Imports(unittest.TestCase):
    def test_import_loads_nothing_of_the_callers(self):
        self.assertEqual(loaded_after("import strand.fiber", CALLER_ONLY + ("logging",)), [])

    def test_a_workers_first_names_load_nothing_of_the_callers(self):
        statement = "from strand.fiber import Pool, Process, SimpleQueue, Pipe, Manager, current_process"
        self.assertEqual(loaded_after(statement, CALLER_ONLY), [])

    def test_making_a_code_package_loads_zipfile(self):
        statement = (
            "import os, tempfile\n"
            "from strand import _code\n"
            "assert 'zipfile' not in sys.modules\n"
            "d = tempfile.mkdtemp()\n"
            "open(os.path.join(d, 'm.py'), 'w').write('x = 1\\n')\n"
            "assert _code.build(d)[:4] == b'PK\\x03\\x04'"  # a zip's first entry
        )
        self.assertEqual(loaded_after(statement, ("zipfile", "sysconfig")), ["zipfile", "sysconfig"])


class LazyNames(unittest.TestCase):
    def test_every_name_resolves_once_and_shows(self):
        import strand.fiber as fiber

        for name in fiber.__all__:
            self.assertIs(getattr(fiber, name), getattr(fiber, name), name)
            self.assertIn(name, dir(fiber))
        with self.assertRaisesRegex(AttributeError, "module 'strand.fiber' has no attribute 'Poool'"):
            fiber.Poool  # noqa: B018

    def test_context_names_are_the_modules(self):
        import strand.fiber as fiber

        ctx = fiber.get_context("spawn")
        for name in ("Process", "Pool", "SimpleQueue", "Pipe", "Manager", "current_process", "active_children",
                     "cpu_count"):
            self.assertIs(getattr(ctx, name), getattr(fiber, name), name)
            self.assertIn(name, dir(ctx))
        self.assertEqual(ctx.get_start_method(), "spawn")
        with self.assertRaisesRegex(AttributeError, "'_Context' object has no attribute 'Queue'"):
            ctx.Queue  # noqa: B018

    def test_meta_stays_the_decorator(self):
        out = subprocess.run(
            [sys.executable, "-c",
             "import sys, strand.fiber as f, strand.fiber.meta, strand.fiber.pool; "
             "print(f.meta is sys.modules['strand.fiber.meta'].meta, callable(f.meta), f.pool.Pool is f.Pool)"],
            capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.split(), ["True", "True", "True"])


if __name__ == "__main__":
    unittest.main()
