#!/usr/bin/env bash
# Builds the local control plane's binaries from the Go module proxy into a
# cache outside the git tree, and reuses them on later runs.
#
#   hack/toolchain.sh            build what is missing, print the bin folders
#   hack/toolchain.sh --env      print `export` lines naming every binary
#
# Cache layout: $KUEUEOPS_CACHE/toolchain/<component>-<version>/bin/<binary>
# A component folder is written under a temporary name and renamed when its
# build succeeded, so an interrupted build is redone, never half-reused.
# Two lanes build at once (Kubernetes, etcd, registry, helm v4 | helm v3, Kueue),
# one builder per cache at a time (a lock: make test's jobs each call this).
#
# Binaries a user already has are honoured instead of building:
#   KUBEBUILDER_ASSETS  a folder holding etcd and kube-apiserver (envtest)
#   KUEUEOPS_ETCD, KUEUEOPS_KUBE_APISERVER, KUEUEOPS_KUBE_CONTROLLER_MANAGER,
#   KUEUEOPS_KUBECTL, KUEUEOPS_HELM (v3), KUEUEOPS_HELM_V4, KUEUEOPS_REGISTRY
#   explicit paths, one per component.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Values from the environment win over the pinned file.
while IFS='=' read -r key value; do
  [[ -z "$key" || "$key" == \#* ]] && continue
  if [[ -z "${!key:-}" ]]; then
    value=${value%\"}; value=${value#\"}
    export "$key=$value"
  fi
done < "$here/versions.env"

CACHE=${KUEUEOPS_CACHE:-$HOME/.cache/kueueops}
TC="$CACHE/toolchain"
mkdir -p "$TC"
# -dwarf=false: the compiler writes no debug info the linker's -s -w would drop anyway (same code, 12% less CPU: a
# cold helm v4 build took 152 CPU s instead of 173.5). GOGC=off up to GOMEMLIMIT: a compile under 2 GiB never
# collects its garbage (137 CPU s with both); a user's own GOGC/GOMEMLIMIT win. docs/dev/ci-time.md has the figures.
export CGO_ENABLED=0 GOFLAGS="-buildvcs=false -gcflags=all=-dwarf=false" GOTOOLCHAIN=local
export GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-2GiB}
log() { printf '[toolchain %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# build_component NAME VERSION FUNC: run FUNC in a scratch module with $out as
# the destination bin folder, once.
build_component() {
  local name=$1 version=$2 fn=$3 dest="$TC/$1-$2"
  if [[ -f "$dest/.complete" ]]; then return 0; fi
  local work tmp
  work=$(mktemp -d "$TC/.work-$name-XXXXXX")
  tmp="$TC/.tmp-$name-$version-$$"
  rm -rf "$tmp"; mkdir -p "$tmp/bin"
  log "building $name $version"
  local start=$SECONDS
  ( cd "$work" && out="$tmp/bin" "$fn" "$version" )
  rm -rf "$work" "$dest"
  echo "$((SECONDS - start))" > "$tmp/.build-seconds"
  touch "$tmp/.complete"
  mv "$tmp" "$dest"
  log "built $name $version in $((SECONDS - start))s"
}

build_etcd() {
  # etcd's server module has replace directives: `go install` refuses it, so
  # it is built from a throwaway wrapper module that requires it as a tool.
  go mod init kueueops.local/etcd-wrapper >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@$1" >/dev/null
  go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
}

build_kube() {
  local version=$1 minor gomod
  minor=${version#v1.}; minor=${minor%%.*}
  go mod init kueueops.local/kube-wrapper >/dev/null 2>&1
  gomod=$(go mod download -json "k8s.io/kubernetes@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
  # with ./staging paths; point each at its published twin instead. The list
  # comes from the release's own go.mod.
  local staging
  staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*#\1#p' "$gomod")
  [[ -n "$staging" ]] || { echo "no staging replaces found in $gomod" >&2; return 1; }
  local args=() m
  for m in $staging; do args+=(-replace "$m=$m@v0.${version#v1.}"); done
  go mod edit "${args[@]}"
  go mod edit -require "k8s.io/kubernetes@$version"
  local pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
  # Pin the version on each package: an unversioned `go get` would move
  # k8s.io/kubernetes to the newest release, away from the staging replaces.
  go get "${pkgs[@]/%/@$version}" >/dev/null
  local x="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  for p in "${pkgs[@]}"; do
    go build -trimpath -ldflags "$x" -o "$out/$(basename "$p")" "$p"
  done
}

build_helm() {
  local version=$1 major=${1%%.*}
  GOBIN="$out" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$version -X helm.sh/helm/$major/internal/version.gitTreeState=clean" \
    "helm.sh/helm/$major/cmd/helm@$version"
}

build_registry() {
  GOBIN="$out" go install -trimpath -ldflags "-s -w" \
    "github.com/distribution/distribution/v3/cmd/registry@$1"
}

build_kueue() {
  local version=$1 dir
  GOBIN="$out" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$version" \
    "sigs.k8s.io/kueue/cmd/kueue@$version"
  # The chart ships in the module zip (charts/kueue); package it with the
  # version it was released as.
  dir=$(go mod download -json "sigs.k8s.io/kueue@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$out/../chart-src"
  cp -r "$dir/charts/kueue" "$out/../chart-src/"
  chmod -R u+w "$out/../chart-src"
  # As Kueue's own hack/helm-chart-package.sh does for a release: the images
  # of a promoted version come from registry.k8s.io at the release tag.
  sed -i -e "s#us-central1-docker.pkg.dev/k8s-staging-images/kueue/#registry.k8s.io/kueue/#" \
    -e "s#^\([[:space:]]*tag:\) release-.*#\1 $version#" \
    -e "s#pullPolicy: Always#pullPolicy: IfNotPresent#" "$out/../chart-src/kueue/values.yaml"
  "$HELM_BIN" package "$out/../chart-src/kueue" --version "${version#v}" --app-version "$version" \
    -d "$out/../chart" >/dev/null
}

resolve() { # resolve VAR-OVERRIDE ENVTEST-NAME COMPONENT VERSION BINARY
  local override=$1 envtest=$2 comp=$3 version=$4 bin=$5
  if [[ -n "${!override:-}" ]]; then echo "${!override}"; return; fi
  if [[ -n "$envtest" && -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/$envtest" ]]; then
    echo "$KUBEBUILDER_ASSETS/$envtest"; return
  fi
  echo "$TC/$comp-$version/bin/$bin"
}

main() {
  local mode=${1:-build}
  local etcd apiserver kcm kubectl helm3 helm4 registry
  etcd=$(resolve KUEUEOPS_ETCD etcd etcd "$ETCD_VERSION" etcd)
  apiserver=$(resolve KUEUEOPS_KUBE_APISERVER kube-apiserver kube "$KUBE_VERSION" kube-apiserver)
  kcm=$(resolve KUEUEOPS_KUBE_CONTROLLER_MANAGER kube-controller-manager kube "$KUBE_VERSION" kube-controller-manager)
  kubectl=$(resolve KUEUEOPS_KUBECTL kubectl kube "$KUBE_VERSION" kubectl)
  helm3=$(resolve KUEUEOPS_HELM "" helm "$HELM_V3_VERSION" helm)
  helm4=$(resolve KUEUEOPS_HELM_V4 "" helm "$HELM_V4_VERSION" helm)
  registry=$(resolve KUEUEOPS_REGISTRY "" registry "$REGISTRY_VERSION" registry)

  if [[ "$mode" == build ]]; then
    # One builder at a time per cache: make test's jobs each call this before their clusters start (hack/test.sh);
    # a second caller waits for the first and then finds every component complete.
    exec 8>"$TC/.lock"
    flock 8
    local total=$SECONDS
    export HELM_BIN=$helm3
    # Two lanes at once, about equally long cold: a Go build keeps the 2 cores busy only about three quarters of its
    # time (downloads, links, the last packages of its graph), so two fill them. Kueue's lane starts with helm v3,
    # which packages its charts; helm v4 ends the other lane (the cold run of session 30 had it end the Kueue lane,
    # which then ran alone for 3 min).
    lane_kube() {
      if [[ ! -x "$apiserver" || ! -x "$kcm" || ! -x "$kubectl" ]]; then
        build_component kube "$KUBE_VERSION" build_kube
      fi
      # The newest Kubernetes CI also runs on (issue 45: hack/test.sh's ansible-core 2.21 job, KUBE_VERSION set to it).
      if [[ -n "${KUBE_VERSION_NEWEST:-}" && "$KUBE_VERSION_NEWEST" != "$KUBE_VERSION" && -z "${KUEUEOPS_KUBE_APISERVER:-}" \
            && ! -x "$TC/kube-$KUBE_VERSION_NEWEST/bin/kube-apiserver" ]]; then
        build_component kube "$KUBE_VERSION_NEWEST" build_kube
      fi
      [[ -x "$etcd" ]] || build_component etcd "$ETCD_VERSION" build_etcd
      [[ -x "$registry" ]] || build_component registry "$REGISTRY_VERSION" build_registry
      [[ -x "$helm4" ]] || build_component helm "$HELM_V4_VERSION" build_helm
    }
    lane_kueue() {
      [[ -x "$helm3" ]] || build_component helm "$HELM_V3_VERSION" build_helm
      local v
      for v in $KUEUE_VERSIONS; do build_component kueue "$v" build_kueue; done
    }
    local kube_pid kueue_pid rc=0
    ( set -e; lane_kube ) & kube_pid=$!
    ( set -e; lane_kueue ) & kueue_pid=$!
    wait "$kube_pid" || rc=1
    wait "$kueue_pid" || rc=1
    if [[ $rc != 0 ]]; then
      log "toolchain build failed (above); what was built is kept, the rest is built by the next run"
      exit 1
    fi
    log "toolchain ready in $((SECONDS - total))s ($(du -sh "$TC" | cut -f1) in $TC)"
  fi
  local v kueue_bins="" kueue_charts=""
  for v in $KUEUE_VERSIONS; do
    kueue_bins+="$v=$TC/kueue-$v/bin/kueue "
    kueue_charts+="$v=$(ls "$TC/kueue-$v/chart/"*.tgz 2>/dev/null | head -1 || true) "
  done
  cat <<ENV
export KUEUEOPS_ETCD='$etcd'
export KUEUEOPS_KUBE_APISERVER='$apiserver'
export KUEUEOPS_KUBE_CONTROLLER_MANAGER='$kcm'
export KUEUEOPS_KUBECTL='$kubectl'
export KUEUEOPS_HELM='$helm3'
export KUEUEOPS_HELM_V4='$helm4'
export KUEUEOPS_REGISTRY='$registry'
export KUEUEOPS_KUEUE_BINS='${kueue_bins% }'
export KUEUEOPS_KUEUE_CHARTS='${kueue_charts% }'
export KUEUEOPS_KUEUE_VERSIONS='$KUEUE_VERSIONS'
export KUEUEOPS_KUBE_VERSION='$KUBE_VERSION'
ENV
}

case "${1:-}" in
  --env) main env ;;
  "") main build >/dev/null; main env >/dev/null; echo "toolchain: $TC" ;;
  *) echo "usage: $0 [--env]" >&2; exit 2 ;;
esac
