#!/usr/bin/env bash
# The README's first programs, taken from README.md as written and run
# against a gateway of the build: the strand command on the PATH it gives,
# the Python program with the PYTHONPATH it gives, and the C program built
# with pkg-config against an installed tree. Each must print what the
# README's comments say it prints.
set -euo pipefail
build="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
dir=$(mktemp -d /tmp/strand-test-readme-XXXXXX)
trap 'show_log_on_failure; stop_gateway; rm -rf "$dir"' EXIT

# block HEADING LANG: the first ```LANG block after the line "## HEADING".
block() {
  awk -v h="## $1" -v open="\`\`\`$2" '
    $0 == h { in_section = 1; next }
    in_section && $0 == open { in_block = 1; next }
    in_block && $0 == "```" { exit }
    in_block { print }' "$src/README.md"
}
# The values the README says a block prints, one a line: "# VALUE" after
# a print in Python, "/* VALUE */" after a printf in C.
said() {
  sed -n -e 's/^ *print(.*# \(.*\)$/\1/p' -e 's/^\tprintf(.*\/\* \(.*\) \*\/$/\1/p'
}

start_gateway "$build/bin" "$dir"
cd "$dir"

# "Putting strand on your path": strand from build/bin.
pool=$(PATH="$build/bin:$PATH" strand pool create --processes 1)
check "strand from build/bin made a pool" "yes" "$([[ $pool == p-* ]] && echo yes || echo no)"

# "A first pool with Python", with the gateway's URL for the README's.
block "A first pool with Python" python | sed "s|http://127.0.0.1:8080|$STRAND_URL|" >first.py
check "the README has a Python program" "yes" "$(grep -q 'strand.Pool' first.py && echo yes || echo no)"
check "the Python program prints what the README says" "$(said <first.py)" \
  "$(PYTHONPATH="$build/lib/python" timeout 120 /usr/bin/python3 first.py)"

# "A first pool with C", built as its first line says against an install.
prefix="$dir/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
block "A first pool with C" c >first.c
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name strand.pc)")
build_line=$(sed -n 's|^/\* first.c: \(cc .*\) \*/$|\1|p' first.c)
check "the C program says how to build it" "yes" "$([ -n "$build_line" ] && echo yes || echo no)"
eval "$build_line -Wall -Werror"
check "the C program prints what the README says" "$(said <first.c)" \
  "$(LD_LIBRARY_PATH="$(pkg-config --variable=libdir strand)" timeout 120 ./first)"
checks_passed
