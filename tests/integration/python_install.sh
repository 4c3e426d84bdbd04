#!/usr/bin/env bash
# The Python package installed as its users install it, each copy then
# running a pool's map from a folder of its own with no PYTHONPATH:
#  - cmake --install (staged with DESTDIR): the package lands in python3's
#    own site folder under the prefix, which Debian's python3 searches, and
#    the installed gateway's workers import that same copy;
#  - pip, offline, into a virtual environment (Debian's pip, setuptools and
#    python3-cloudpickle): every module, at the project's version.
set -euo pipefail
build="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-pyinstall-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
version=$(cache CMAKE_PROJECT_VERSION)
prefix=$(cache CMAKE_INSTALL_PREFIX)
site=$(cache STRAND_PYTHON_INSTALL_DIR)
unset PYTHONPATH
# The workers' runtime: Debian's python3, as the program's.
export STRAND_PYTHON=/usr/bin/python3

DESTDIR="$dir/root" cmake --install "$build" >/dev/null
installed="$dir/root$prefix/$site/strand"
check "cmake --install: the package in python3's site folder" "yes" \
  "$([ -f "$installed/__init__.py" ] && [ -f "$installed/fiber/experimental/ring.py" ] && echo yes || echo no)"
check "the same modules as the source's" "$(cd "$src/client/python" && find strand -name '*.py' | sort)" \
  "$(cd "$installed/.." && find strand -name '*.py' | sort)"
start_gateway "$dir/root$prefix/bin" "$dir"

# A program of the user's, in a folder of its own: the package it imports,
# and the one its tasks import on the workers.
mkdir "$dir/cwd"
cat >"$dir/cwd/first.py" <<'PY'
import strand


def square_and_where(x):
    import strand  # the workers' own copy

    return x * x, strand.__file__


if __name__ == "__main__":
    with strand.Pool(2) as pool:
        results = pool.map(square_and_where, range(6))
    print(strand.__version__)
    print(strand.__file__)
    print([value for value, _ in results])
    print(" ".join(sorted({where for _, where in results})))
PY
run_first() { (cd "$dir/cwd" && "$@" first.py); }

# Debian's python3 finds the installed package with no PYTHONPATH: shown
# with the staged prefix bound where it would be installed.
if [ "$prefix" = /usr/local ]; then
  check "Debian's python3 searches the site folder" "True" \
    "$(/usr/bin/python3 -c "import sys; print('$prefix/$site' in sys.path)")"
  out=$(run_first bwrap --dev-bind / / --bind "$dir/root$prefix" "$prefix" /usr/bin/python3)
  program_copy="$prefix/$site/strand/__init__.py"
else # a prefix of the operator's: PYTHONPATH names it, as docs/python.md says
  out=$(PYTHONPATH="$dir/root$prefix/$site" run_first /usr/bin/python3)
  program_copy="$installed/__init__.py"
fi
check "cmake --install: the program's package and map" "$version
$program_copy
[0, 1, 4, 9, 16, 25]
$installed/__init__.py" "$out"

# pip builds in the folder it is given: a copy, not the checkout.
cp -r "$src/client/python" "$dir/pkg"
rm -rf "$dir/pkg/build" "$dir/pkg"/*.egg-info
/usr/bin/python3 -m venv --system-site-packages "$dir/venv"
if ! "$dir/venv/bin/pip" install --no-index --no-build-isolation "$dir/pkg" >"$dir/pip.log" 2>&1; then
  cat "$dir/pip.log"
  check "pip install" "installed" "failed"
fi
check "pip: the project's version" "Version: $version" "$("$dir/venv/bin/pip" show strand | grep '^Version:')"
check "pip: every module of the source's" "$(cd "$src/client/python" && find strand -name '*.py' | sort)" \
  "$("$dir/venv/bin/pip" show -f strand | sed -n 's|^  \(strand/.*\.py\)$|\1|p' | sort)"
venv_copy=$("$dir/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/strand/__init__.py
check "pip: the program's package and map" "$version
$venv_copy
[0, 1, 4, 9, 16, 25]
$installed/__init__.py" "$(run_first "$dir/venv/bin/python")"
checks_passed
