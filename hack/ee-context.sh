#!/usr/bin/env bash
# Generate the execution environment's build context (issue 7):
#   1. build the collection tarball -> build/ee/kueueops-aks.tar.gz
#   2. copy the pinned helm v3 binary (hack/toolchain.sh builds it) -> build/ee/helm
#   3. ansible-builder create -f execution-environment.yml -c build/ee/context
# No image is built here (this machine has no container engine); build the context
# with `podman build -t kueueops-ee build/ee/context` or `docker build ...` elsewhere.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
OUT=${EE_OUT:-$ROOT/build/ee}
rm -rf "$OUT"
mkdir -p "$OUT"
"$VENV/bin/ansible-galaxy" collection build "$ROOT" --output-path "$OUT" >/dev/null
mv "$OUT"/kueueops-aks-*.tar.gz "$OUT/kueueops-aks.tar.gz"
eval "$("$ROOT/hack/toolchain.sh" --env)"
[[ -x "$KUEUEOPS_HELM" ]] || { echo "ee-context.sh: $KUEUEOPS_HELM missing; run 'make toolchain'" >&2; exit 2; }
install -m 0755 "$KUEUEOPS_HELM" "$OUT/helm"
cd "$ROOT"
"$VENV/bin/ansible-builder" create -f execution-environment.yml -c "$OUT/context" --output-filename Containerfile
echo "build context: $OUT/context (podman build -t kueueops-ee $OUT/context)"
