#!/usr/bin/env bash
# `strand run` on Kubernetes, as `fiber run` is used: a command in a pod with
# a claim mounted (-v claim:/path), its output through `strand logs` (the
# pod's log, read through the API), and a GPU the cluster does not have
# failing with the scheduler's words and exit code 1. The gateway finds the
# cluster through a kubeconfig. Exits 77 (skipped) without a cluster.
set -uo pipefail
bin="$1"
build="$2"
src="$(cd "$(dirname "$0")/../.." && pwd)"
. "$src/tests/integration/lib.sh"
require_cluster
kubectl() { "$src/deploy/k8s-cluster.sh" kubectl "$@"; }
"$src/deploy/build-images.sh" "$build" test >/dev/null || exit 1
dir=$(mktemp -d /tmp/strand-test-cli-k8s-XXXXXX)
claim="strand-cli-claim-$$"
cleanup() {
  show_log_on_failure
  stop_gateway
  kubectl delete pvc "$claim" --wait=false >/dev/null 2>&1
  kubectl delete pv "$claim" --wait=false >/dev/null 2>&1
  rm -rf "$dir"
}
trap cleanup EXIT
# A fresh machine once hung at the --gpu step with nothing said (the pod's
# creation answer, taken in late, hid the scheduler's word that it cannot
# run: test_k8s_watch makes that happen); past the deadline, the cluster's
# view of the pods and the scheduler's last words.
on_deadline "$src/deploy/k8s-cluster.sh" kubectl get pods,events -o wide
on_deadline tail -30 "${K8S_CACHE:-/var/cache/strand-k8s}/run/log/kube-scheduler.log"
start_gateway "$bin" "$dir" --kubeconfig "$KUBECONFIG" --k8s-host-network --k8s-pull-policy Never \
  --k8s-start-grace 3 --image strand-worker:test --allow-volumes "strand-cli-claim-*" || exit 1
strand="$bin/strand"

# A claim on a host folder the pod's user (65534) may write.
mkdir "$dir/pv" && chmod 777 "$dir/pv"
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: $claim}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  claimRef: {namespace: default, name: $claim}
  hostPath: {path: "$dir/pv"}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $claim, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: $claim
  resources: {requests: {storage: 1Gi}}
YAML
for _ in $(seq 300); do
  [ "$(kubectl get pvc "$claim" -o jsonpath='{.status.phase}')" = Bound ] && break
  sleep 0.1
done

# fiber run -v claim:/data: the command writes through the claim.
out=$("$strand" run --backend kubernetes -v "$claim:/data" --wait -- /usr/bin/strand-worker \
  --plugin-path /usr/lib/strand --run fp.so:write_file --arg '{"path":"/data/out","text":"from-a-pod"}')
check "run --wait on kubernetes: exit 0" 0 $?
check "run --wait: its output" "true" "$out"
check "the claim holds what it wrote" "from-a-pod" "$(cat "$dir/pv/out" 2>&1)"

# strand logs: the pod's log through the API.
id=$("$strand" run --backend kubernetes -- /usr/bin/strand-worker --run echo --arg '"hello-k8s"')
check "run prints an id" "r-" "${id:0:2}"
out=$("$strand" logs -f "$id"); check "logs -f of a pod" '"hello-k8s"' "$out"
[[ "$("$strand" ps | grep "$id")" == *kubernetes* ]]; check "ps: its backend" 0 $?

# A GPU this cluster has not: the scheduler says so, and the run fails.
err=$("$strand" run --backend kubernetes --gpu 1 --wait -- /usr/bin/strand-worker --help 2>&1 >/dev/null)
check "run --gpu 1 without GPUs: exit 1" 1 $?
words=$(grep -o "Insufficient nvidia.com/gpu" <<<"$err" || echo "$err")
check "... with the scheduler's words" "Insufficient nvidia.com/gpu" "$words"

checks_passed
