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
# execution-environment.yml takes the tarball and helm from build/ee (additional_build_files);
# the generated context goes to $EE_OUT/context (default: build/ee/context).
STAGE=$ROOT/build/ee
OUT=${EE_OUT:-$STAGE}
rm -rf "$STAGE" "$OUT/context"
mkdir -p "$STAGE" "$OUT"
"$VENV/bin/ansible-galaxy" collection build "$ROOT" --output-path "$STAGE" >/dev/null
mv "$STAGE"/kueueops-aks-*.tar.gz "$STAGE/kueueops-aks.tar.gz"
eval "$("$ROOT/hack/toolchain.sh" --env)"
[[ -x "$KUEUEOPS_HELM" ]] || { echo "ee-context.sh: $KUEUEOPS_HELM missing; run 'make toolchain'" >&2; exit 2; }
install -m 0755 "$KUEUEOPS_HELM" "$STAGE/helm"
cd "$ROOT"
"$VENV/bin/ansible-builder" create -f execution-environment.yml -c "$OUT/context" --output-filename Containerfile
for f in _build/collections/kueueops-aks.tar.gz _build/helm/helm; do
    [[ -f "$OUT/context/$f" ]] || { echo "ee-context.sh: $f missing from the build context" >&2; exit 1; }
done
echo "build context: $OUT/context (podman build -t kueueops-ee $OUT/context)"
