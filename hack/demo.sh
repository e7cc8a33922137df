#!/usr/bin/env bash
# make demo: the main job on the embedded local cluster.
#   1. build or reuse the toolchain (hack/toolchain.sh)
#   2. start the local control plane (tests/harness), unless one is running
#   3. run playbooks/site.yml against it: preflight, install Kueue from the local
#      OCI registry with Helm, verify; then run it again to show it is idempotent
# The cluster is stopped at the end if this script started it; set
# KUEUEOPS_KEEP_CLUSTER=1 to keep it (then `make cluster-down`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export ANSIBLE_COLLECTIONS_PATH="$PWD/.venv/collections"
export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-1}

started=0
if ! $PY -m tests.harness status 2>/dev/null | grep -q '"running": true'; then
  $PY -m tests.harness up
  started=1
fi
cleanup() { if [[ $started == 1 && -z "${KUEUEOPS_KEEP_CLUSTER:-}" ]]; then $PY -m tests.harness down; fi; }
trap cleanup EXIT
eval "$($PY -m tests.harness env)"

echo "== kueueops.aks demo: local cluster $(kubectl version -o json 2>/dev/null | $PY -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])'), chart $KUEUE_CHART_REF (versions: $KUEUE_CHART_VERSIONS)"
echo "== 1st run of playbooks/site.yml"
.venv/bin/ansible-playbook -i playbooks/inventory/local.yml playbooks/site.yml -e @playbooks/vars/queues.yml -e kueue_smoke_test=true
echo "== 2nd run (idempotent: expect changed=0)"
.venv/bin/ansible-playbook -i playbooks/inventory/local.yml playbooks/site.yml -e @playbooks/vars/queues.yml -e kueue_smoke_test=true | tee /tmp/kueueops-demo-2.log | tail -n 4
echo "== what the seed document's checks show now"
kubectl get deploy -n kueue-system
kubectl get crds | grep kueue
kubectl get clusterqueues,localqueues -A
helm list --namespace kueue-system
