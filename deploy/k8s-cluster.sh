#!/usr/bin/env bash
# The test cluster: a real single-node Kubernetes 1.20 built from Debian's
# `kubernetes` source package by ../shared/k8s (K8S_SCRIPTS), into a cache
# outside the checkout (K8S_CACHE, default /var/cache/strand-k8s) once per
# machine, about 10 minutes on 2 cores.
#   deploy/k8s-cluster.sh up     build if needed, start; prints the env file to source
#   deploy/k8s-cluster.sh down   stop it (pods, kubelet, control plane, etcd)
#   deploy/k8s-cluster.sh kubectl ARGS...   its kubectl, as its admin
# Exits 77, saying why, where it cannot (no scripts, no Docker engine).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
scripts=${K8S_SCRIPTS:-$repo/../shared/k8s}
cache=${K8S_CACHE:-/var/cache/strand-k8s}
export K8S_HOME=$cache K8S_RUN=$cache/run

if [ ! -x "$scripts/up.sh" ]; then
  echo "no cluster scripts in $scripts (set K8S_SCRIPTS): the kubernetes tests will skip" >&2
  exit 77
fi
case "${1:-}" in
up)
  if ! docker info >/dev/null 2>&1; then
    echo "no Docker engine for the kubelet: the kubernetes tests will skip" >&2
    exit 77
  fi
  if [ ! -x "$cache/bin/kubelet" ]; then
    echo "building Kubernetes from Debian's source package into $cache (once per machine, ~10 min)" >&2
    "$scripts/build-k8s.sh" "$cache" >"$cache.build.log" 2>&1 || {
      tail -20 "$cache.build.log" >&2
      exit 1
    }
  fi
  "$scripts/up.sh" >"$cache.up.log" 2>&1 || {
    tail -20 "$cache.up.log" >&2
    "$scripts/down.sh" >/dev/null 2>&1 || true
    exit 1
  }
  echo "$K8S_RUN/env"
  ;;
down) "$scripts/down.sh" >/dev/null 2>&1 ;;
kubectl)
  shift
  exec "$cache/bin/kubectl" --kubeconfig="$K8S_RUN/admin.kubeconfig" "$@"
  ;;
*)
  echo "usage: $0 up|down|kubectl ARGS..." >&2
  exit 64
  ;;
esac
