"""A user's program as it sits on disk, for the tests of code that travels
(python_pool.py on the local backend, python_containers.py in containers):
its own package, a module imported from beside its folder, a data file
read by a relative path, and files that must stay behind (a gateway's
token in the folder, a build folder its .gitignore names).

run() runs it as a program of its own, in the folder given, on the
backend and image of $STRAND_TEST_BACKEND and $STRAND_TEST_IMAGE (when
set), and returns what it printed: the values its tasks returned, and
what they printed, which comes back to it."""

import json
import os
import re
import subprocess
import sys

EXPECTED = {
    "triples": [0, 3, 6, 9, 12, 15],
    "data": ["alpha", "beta", "gamma"],
    "shared": "hello worker",
    "token_there": False,
    "build_there": False,
    "process_exit": 0,
    "printed": ["tripling %d" % x for x in range(6)],
}

PROGRAM = """
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared"))
import strand
from mypkg import helpers
import common

strand.init(backend=os.environ.get("STRAND_TEST_BACKEND"), image=os.environ.get("STRAND_TEST_IMAGE"))
with strand.Pool(2) as pool:
    out = {
        "triples": pool.map(helpers.triple, range(6)),
        "data": pool.apply(helpers.read, ("data/words.txt",)),
        "shared": pool.apply(common.greet, ("worker",)),
        "token_there": pool.apply(os.path.exists, ("strand.token",)),
        "build_there": pool.apply(os.path.exists, ("build/big.bin",)),
        "code": strand.gateway.default().request("GET", "/v1/pools/" + pool.id)["code"],
    }
proc = strand.Process(target=helpers.write_back, args=("out.txt",))
proc.start()
proc.join()
out["process_exit"] = proc.exitcode
print(json.dumps(out))
"""

FILES = {
    "project/main.py": PROGRAM,
    "project/mypkg/__init__.py": "",
    "project/mypkg/helpers.py": "def triple(x):\n    print('tripling', x)\n    return 3 * x\n"
    "def read(path):\n    with open(path) as f:\n        return f.read().split()\n"
    "def write_back(path):\n    with open(path, 'w') as f:\n        f.write('written')\n",
    "project/data/words.txt": "alpha beta\ngamma\n",
    "project/strand.token": "not-for-tasks",
    "project/.gitignore": "/build/\n",
    "project/build/big.bin": "x" * 1000,
    "shared/common.py": "def greet(who):\n    return 'hello ' + who\n",
}


def make(root):
    """Writes the program under root; returns its folder."""
    for name, text in FILES.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return os.path.join(root, "project")


def run(project, cwd):
    """Runs the program in cwd: what it printed last, as JSON, with
    "printed": what its tasks printed (each line after its worker's id),
    sorted."""
    import strand

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
    done = subprocess.run(
        [sys.executable, os.path.join(project, "main.py")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    if done.returncode != 0:
        raise AssertionError("the program failed (%d): %s" % (done.returncode, done.stderr))
    lines = done.stdout.splitlines()
    out = json.loads(lines[-1])
    out["printed"] = sorted(re.sub(r"^\(w-[0-9a-f]{16}\) ", "", l) for l in lines[:-1])
    return out


def check(test, root):
    """Makes the program under root and runs it in its folder: test (a
    unittest.TestCase) checks what it printed is EXPECTED. Returns its
    folder."""
    project = make(root)
    out = run(project, project)
    out.pop("code")
    test.assertEqual(out, EXPECTED)
    return project
