#!/usr/bin/env bash
# The gateway deployed into the test cluster from deploy/kubernetes (the
# single-node overlay: host network, no registry), with its in-cluster
# configuration, then examples/pi against it: its workers are pods it makes
# with its service account. The manifests are checked by the API server
# (--dry-run=server) first, and the Role is checked to allow nothing more
# than it needs. Exits 77 (skipped) without a cluster (tests/run.sh starts one).
set -euo pipefail
src="$1"
build="$2"
if [ -z "${K8S_SERVER:-}" ]; then
  echo "skipped: no cluster (K8S_SERVER unset; tests/run.sh starts one)"
  exit 77
fi
if [ "$K8S_SERVER" != https://127.0.0.1:6443 ]; then
  echo "skipped: the single-node overlay expects the API server at https://127.0.0.1:6443, not $K8S_SERVER"
  exit 77
fi
kubectl() { "$src/deploy/k8s-cluster.sh" kubectl "$@"; }
tag=k8sdeploy
"$src/deploy/build-images.sh" "$build" "$tag" >/dev/null
dir=$(mktemp -d /tmp/strand-k8s-deploy-XXXXXX)
chmod 755 "$dir"
cleanup() {
  code=$?
  if [ $code -ne 0 ]; then
    echo "--- exit $code; the gateway pod said:"
    kubectl -n strand logs deploy/strand-gateway --tail=30 2>&1 || true
    kubectl -n strand get pods -o wide 2>&1 || true
  fi
  kubectl delete namespace strand --wait=true --timeout=120s >/dev/null 2>&1 || true
  kubectl delete pv strand-test-data --wait=true --timeout=30s >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

# The manifests, as the API server (admission, schema) sees them.
kubectl apply -f "$src/deploy/kubernetes/base/namespace.yaml" >/dev/null
kubectl apply --dry-run=server -k "$src/deploy/kubernetes/base"
kubectl apply --dry-run=server -k "$src/deploy/kubernetes/single-node" >/dev/null

# What the operator makes: the API token Secret, and (no StorageClass on this
# cluster) a volume for the database, here a host folder owned by the
# gateway's user.
token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
kubectl -n strand create secret generic strand-api-token --from-literal=token="$token" >/dev/null
mkdir "$dir/data"
chown 65534:65534 "$dir/data"
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: strand-test-data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  claimRef: {namespace: strand, name: strand-data}
  hostPath: {path: "$dir/data", type: Directory}
YAML

# This build's images instead of :latest (a base must be a relative path).
cat >"$dir/kustomization.yaml" <<YAML
bases:
  - $(realpath --relative-to="$dir" "$src/deploy/kubernetes/single-node")
images:
  - name: strand-gateway
    newTag: $tag
patchesJson6902:
  - target: {group: apps, version: v1, kind: Deployment, name: strand-gateway, namespace: strand}
    path: worker-image.yaml
YAML
cat >"$dir/worker-image.yaml" <<YAML
- op: replace
  path: /spec/template/spec/containers/0/args/3
  value: --image=strand-worker:$tag
YAML
kubectl apply -k "$dir" >/dev/null
kubectl -n strand rollout status deploy/strand-gateway --timeout=180s

url=http://127.0.0.1:9180
# The gateway's log, read whole: `logs | grep -q` would end kubectl with
# SIGPIPE at the first match, and pipefail makes that the script's exit 141.
gateway_log() { kubectl -n strand logs deploy/strand-gateway; }
# In-cluster configuration: its own namespace, the API server it was told.
grep -qF "kubernetes backend: https://127.0.0.1:6443, namespace strand" <<<"$(gateway_log)"
# Every request is authenticated.
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/pools")" = 401 ]
# The Role: pods and their logs, secrets made and deleted, in its namespace
# only; it cannot read a secret, nor touch another namespace.
sa=system:serviceaccount:strand:strand-gateway
[ "$(kubectl auth can-i --as=$sa -n strand create pods)" = yes ]
[ "$(kubectl auth can-i --as=$sa -n strand watch pods)" = yes ]
[ "$(kubectl auth can-i --as=$sa -n strand get pods/log)" = yes ]
[ "$(kubectl auth can-i --as=$sa -n strand delete secrets)" = yes ]
[ "$(kubectl auth can-i --as=$sa -n strand get secrets || true)" = no ]
[ "$(kubectl auth can-i --as=$sa -n default create pods || true)" = no ]
[ "$(kubectl auth can-i --as=$sa create nodes || true)" = no ]

# examples/pi against it: a pool of 4 pods in namespace strand.
out=$(STRAND_URL=$url STRAND_TOKEN=$token "$src/examples/pi/pi.sh" 200000 20)
echo "$out"
[[ "$out" =~ ^Pi\ is\ roughly\ 3\.1 ]]
grep -qF "created: 4 kubernetes workers" <<<"$(gateway_log)"
# The pool is gone (pi.sh deletes it), and its pods with it.
for _ in $(seq 300); do
  [ -z "$(kubectl -n strand get pods -l strand -o name)" ] && break
  sleep 0.1
done
[ -z "$(kubectl -n strand get pods -l strand -o name)" ]
# The database is on the volume.
[ -s "$dir/data/strand.db" ]
echo "deployed gateway ran examples/pi with its pods"
