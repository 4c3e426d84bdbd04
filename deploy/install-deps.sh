#!/usr/bin/env bash
# Installs the Debian bookworm packages strand builds, tests and runs with.
# Every dependency is a Debian package; nothing is vendored or downloaded
# from anywhere else. Skips apt entirely when everything is already there.
#   deploy/install-deps.sh [docker] [slurm] [test]
#     docker: also the Docker engine and docker-compose, for the docker backend
#     slurm:  also Slurm's client commands (sbatch, squeue, scancel,
#             scontrol), for the slurm backend; with its daemons and munge,
#             which deploy/slurm-cluster.sh runs as a single-node cluster
#     test:   also clang and its libFuzzer runtime, for tests/fuzz; openssl
#             for test certificates; gdb, to show where a hung gateway is;
#             libnetfilter-queue, the hosts test's link delay;
#             node and npm (unless some node is installed already), which
#             fetch the test tools tests/openapi and tests/dashboard pin;
#             chromium, which the dashboard's test drives; pip, venv and
#             setuptools, with which python_install installs the package
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libnng-dev libprotobuf-c-dev protobuf-c-compiler
  libcurl4-openssl-dev libjansson-dev libsqlite3-dev libyaml-dev libcmocka-dev libmbedtls-dev libssl-dev libarchive-dev
  curl jq python3 python3-cloudpickle procps bubblewrap
)
for extra in "$@"; do
  case "$extra" in
  docker) packages+=(docker.io docker-compose) ;;
  slurm) packages+=(slurm-client slurmctld slurmd munge) ;;
  test)
    packages+=(clang libclang-rt-14-dev openssl gdb libnetfilter-queue-dev python3-pip python3-venv python3-setuptools)
    command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
    packages+=(chromium)
    ;;
  *) echo "install-deps.sh: unknown set '$extra' (docker, slurm, test)" >&2; exit 64 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
