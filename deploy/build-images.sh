#!/usr/bin/env bash
# Builds the strand-worker, strand-worker-python and strand-gateway images
# without pulling anything (no registry is reachable): each is FROM
# scratch, holding the binaries and exactly the shared libraries ldd names
# for them.
#   deploy/build-images.sh BUILD_DIR [TAG]
set -euo pipefail
build="$(cd "${1:?usage: build-images.sh BUILD_DIR [TAG]}" && pwd)"
tag="${2:-latest}"
here="$(cd "$(dirname "$0")" && pwd)"
ctx=$(mktemp -d /tmp/strand-images-XXXXXX)
trap 'rm -rf "$ctx"' EXIT

# Copies the build's plugins (lib/*.so; not libstrand, the C client) into a folder.
add_plugins() {
  local f
  for f in "$build"/lib/*.so; do
    case "$(basename "$f")" in lib*) ;; *) cp "$f" "$1/" ;; esac
  done
}

# Copies files and the libraries they load (and the loader) into a root.
add_with_libs() {
  local root="$1"; shift
  for f in "$@"; do
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
}

# Copies into a root the libraries strand-worker loads only when it needs
# them, which ldd does not name: libcurl (to join a pool, --join) and
# libarchive (to unpack a code package); each and what it loads. (awk
# reads ldconfig's whole list: an early exit would leave it a broken pipe,
# and pipefail would end this script, at random and without a word.)
add_loaded_later() {
  local soname lib
  for soname in libcurl.so.4 libarchive.so.13; do
    lib=$(ldconfig -p | awk -v name="$soname" '$1 == name && !found {print $NF; found = 1}')
    [ -n "$lib" ] || { echo "build-images.sh: $soname not found (deploy/install-deps.sh)" >&2; exit 1; }
    mkdir -p "$1$(dirname "$lib")"
    cp -L "$lib" "$1$lib"
    add_with_libs "$1" "$lib"
  done
}

# worker: strand-worker, the example plugins, a /tmp.
w="$ctx/worker"
mkdir -p "$w/usr/bin" "$w/usr/lib/strand" "$w/tmp" "$w/etc"
chmod 1777 "$w/tmp" # workers run as nobody (65534) unless a pool asks for root
cp "$build/bin/strand-worker" "$w/usr/bin/"
add_plugins "$w/usr/lib/strand"
add_with_libs "$w" "$w/usr/bin/strand-worker" "$w"/usr/lib/strand/*.so
add_loaded_later "$w"
printf 'root:x:0:0:root:/:/usr/bin/strand-worker\nnobody:x:65534:65534:nobody:/tmp:/usr/bin/strand-worker\n' \
  >"$w/etc/passwd"
cp "$here/worker.Dockerfile" "$w/Dockerfile"
docker build -q -t "strand-worker:$tag" "$w" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log"; exit 1; }

# worker-python: the worker's root plus this machine's Debian python3 (the
# interpreter, its standard library and the libraries its modules load),
# python3-cloudpickle and strand's Python package, both where Debian's
# python3 finds its own packages (/usr/lib/python3/dist-packages): workers
# of pools with "runtime": "python". No registry and no debootstrap: the
# files are the ones this machine runs.
p="$ctx/worker-python"
cp -a "$w" "$p"
python=$(readlink -f /usr/bin/python3)
pyver=$(basename "$python")
mkdir -p "$p/usr/lib/python3/dist-packages"
cp "$python" "$p/usr/bin/"
ln -s "$pyver" "$p/usr/bin/python3"
cp -a "/usr/lib/$pyver" "$p/usr/lib/"
rm -rf "$p/usr/lib/$pyver/test" "$p/usr/lib/$pyver/idlelib" "$p/usr/lib/$pyver/tkinter"
cp -a /usr/lib/python3/dist-packages/cloudpickle "$p/usr/lib/python3/dist-packages/"
cp -a "$build/lib/python/strand" "$p/usr/lib/python3/dist-packages/"
add_with_libs "$p" "$python" "$p/usr/lib/$pyver"/lib-dynload/*.so
docker build -q -t "strand-worker-python:$tag" "$p" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log"; exit 1; }

# gateway: strand-gateway, strand-worker (for the local backend), the
# dashboard; in the context, the file system under root/ and the database
# folder apart, for the Dockerfile to give it to the gateway's user.
g="$ctx/gateway"
r="$g/root"
mkdir -p "$r/usr/bin" "$r/usr/lib/strand" "$r/usr/share/strand" "$r/tmp" "$r/etc" "$g/data"
chmod 0700 "$g/data"
chmod 1777 "$r/tmp"
cp "$build/bin/strand-gateway" "$build/bin/strand-worker" "$r/usr/bin/"
add_plugins "$r/usr/lib/strand"
cp -r "$build/share/strand/web" "$r/usr/share/strand/web"
add_with_libs "$r" "$r/usr/bin/strand-gateway" "$r/usr/bin/strand-worker" "$r"/usr/lib/strand/*.so
add_loaded_later "$r"
# libcurl resolves names through NSS; the Docker socket needs none, but the
# resolver must find its files.
for f in /etc/nsswitch.conf /etc/hosts; do [ -f "$f" ] && cp "$f" "$r/etc/"; done
printf 'root:x:0:0:root:/:/usr/bin/strand-gateway\nstrand:x:65534:65534:strand:/data:/usr/bin/strand-gateway\n' \
  >"$r/etc/passwd"
cp "$here/gateway.Dockerfile" "$g/Dockerfile"
docker build -q -t "strand-gateway:$tag" "$g" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log"; exit 1; }
echo "built strand-worker:$tag, strand-worker-python:$tag and strand-gateway:$tag"
