#!/usr/bin/env bash
# Starts a Docker engine for the tests and the compose setup if none answers:
# no bridge and no iptables (containers use the host's network, and this
# machine allows traffic on loopback only). Exits 0 once the daemon answers,
# 1 if it cannot be started here (not root, no kernel support).
set -u
if docker info >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v dockerd >/dev/null; then
  echo "cannot start dockerd: needs root and Debian's docker.io" >&2
  exit 1
fi
log=/tmp/strand-dockerd.log
nohup dockerd --bridge=none --iptables=false >"$log" 2>&1 &
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 0.5
done
echo "dockerd did not come up; see $log" >&2
tail -5 "$log" >&2
exit 1
