# kueueops.aks developer entry points. `make demo` and `make test` are the two
# commands a newcomer needs; everything else is what they are made of.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
COLLECTIONS := $(VENV)/collections
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/$(COLLECTIONS)
# One run folder per checkout, so two checkouts never share a cluster.
export KUEUEOPS_RUN_DIR ?= $(CURDIR)/.run
# make test's pytest workers, one local cluster each in $(KUEUEOPS_RUN_DIR)-gw0, -gw1 (tests/conftest.py); 0 = serial.
TEST_WORKERS ?= 2
export TEST_WORKERS
# make test runs the 2.16 compat job beside the main run (hack/test.sh) with this many workers, in $(KUEUEOPS_RUN_DIR)-compat-gw0.
COMPAT_WORKERS ?= 1
export COMPAT_WORKERS
# ... and the ansible-core 2.21 job with this many, in $(KUEUEOPS_RUN_DIR)-core221-gw0.
CORE221_WORKERS ?= 2
export CORE221_WORKERS

.PHONY: help
help: ## Show the targets
	@awk 'BEGIN{FS=":.*##"} /^[a-zA-Z_-]+:.*##/{printf "  %-16s %s\n",$$1,$$2}' $(MAKEFILE_LIST)

# hack/venv.sh builds the venv once per set of requirements in ~/.cache/kueueops/venvs and copies it here after.
$(VENV)/.installed: requirements.txt requirements-test.txt hack/venv.sh
	PY=$(PY) hack/venv.sh $(VENV) -r requirements-test.txt
	mkdir -p $(COLLECTIONS)/ansible_collections/kueueops
	ln -sfn $(CURDIR) $(COLLECTIONS)/ansible_collections/kueueops/aks
	touch $@

.PHONY: venv
venv: $(VENV)/.installed ## Python venv with ansible-core, deps and test tools; the collection linked in

.PHONY: toolchain
toolchain: ## Build (or reuse) etcd, kube-apiserver, helm v3/v4, registry, Kueue
	hack/toolchain.sh

.PHONY: cluster-up
cluster-up: venv toolchain ## Start the local control plane (idempotent)
	$(VPY) -m tests.harness up

.PHONY: cluster-down
cluster-down: ## Stop exactly what cluster-up started (idempotent)
	@if [ -x $(VPY) ]; then $(VPY) -m tests.harness down; fi

.PHONY: clusters-down
clusters-down: ## Stop the cluster of every run folder .run-* (KUEUEOPS_RUN_DIR-*: make test's workers and jobs, and the clusters their tests start)
	@for dir in $(KUEUEOPS_RUN_DIR)-*; do \
		if [ -f "$$dir/state.json" ]; then KUEUEOPS_RUN_DIR="$$dir" $(MAKE) -s cluster-down; fi; \
	done

.PHONY: cluster-env
cluster-env: ## Print export lines for the running cluster (use: eval "$$(make -s cluster-env)")
	@$(VPY) -m tests.harness env

.PHONY: emulator-up emulator-down
emulator-up: cluster-up ## Start the ARM emulator beside the local cluster (AZURE_* exports in cluster-env)
	$(VPY) -m tests.emulators.arm up
emulator-down: ## Stop the ARM emulator (cluster-down stops it too)
	@if [ -x $(VPY) ]; then $(VPY) -m tests.emulators.arm down; fi

.PHONY: hold-manager release-manager
hold-manager: ## Stop the Kueue manager of the local cluster and keep it stopped (for failure drills)
	$(VPY) -m tests.harness hold
release-manager: ## Let the node agent start the Kueue manager again
	$(VPY) -m tests.harness release
.PHONY: block-visibility unblock-visibility
block-visibility: ## Stop proxying the visibility Service only (its APIServices turn unavailable; for drills)
	$(VPY) -m tests.harness visibility-block
unblock-visibility: ## Proxy the visibility Service again
	$(VPY) -m tests.harness visibility-unblock

.PHONY: unit
unit: venv ## Unit tests (pure logic, no cluster)
	$(VPY) -m pytest tests/unit -q -rs

.PHONY: sanity
sanity: venv ## ansible-test sanity (no ignore files) on 2.19, 2.16, 2.20, 2.21, 2.22 and ansible-lint --profile production
	hack/sanity.sh

.PHONY: docs
docs: ## The docs site, as Ansible's docs are built (antsibull-docs, Sphinx -W, offline; hack/docs.sh): build/docs/build/html
	hack/docs.sh

.PHONY: galaxy-check
galaxy-check: venv ## galaxy-importer on the built tarball, as Galaxy imports it, with ansible-test sanity run locally (hack/galaxy_check.sh)
	hack/galaxy_check.sh

.PHONY: release
release: venv ## The release: the collection tarball (ansible-galaxy collection build) in build/, and the docs site (make docs)
	mkdir -p build
	$(VENV)/bin/ansible-galaxy collection build --force --output-path build .
	hack/docs.sh
	@echo "release: build/kueueops-aks-$$($(VPY) -c 'import yaml; print(yaml.safe_load(open("galaxy.yml"))["version"])').tar.gz," \
	      "the docs site in build/docs/build/html"

.PHONY: integration
integration: venv toolchain ## Integration and reliability tests on the real local control plane (started if not running)
	$(VPY) -m pytest tests/integration tests/reliability -q -rs

.PHONY: test-cluster
test-cluster: venv ## The ansible-test integration targets against your cluster: make test-cluster KUBECONFIG=... (hack/test_cluster.py)
	$(VPY) hack/test_cluster.py $(if $(KUBECONFIG),--kubeconfig "$(KUBECONFIG)") $(TARGETS)

.PHONY: compat
compat: venv ## Unit tests and site/configure/status/uninstall/restore playbooks on ansible-core 2.16 (.venv-compat)
	hack/compat.sh

.PHONY: python
python: ## Python 3.13 for the ansible-core 2.20+ venvs: built once from Debian's source package into ~/.cache/kueueops (hack/python.sh)
	hack/python.sh 3.13

.PHONY: core221
core221: venv ## Unit tests and the playbooks users run on ansible-core 2.21, Python 3.13 (.venv-2.21; hack/matrix.sh)
	KUEUEOPS_RUN_DIR=$(KUEUEOPS_RUN_DIR)-core221 TEST_WORKERS=$(CORE221_WORKERS) COMPAT_CORE=2.21 hack/compat.sh

.PHONY: sanity-matrix
sanity-matrix: venv ## ansible-test sanity on ansible-core 2.16 (Python 3.11), 2.20, 2.21 and 2.22 (Python 3.13), one venv each
	hack/sanity.sh matrix

.PHONY: test
test: venv ## Everything CI runs, four jobs at once (hack/test.sh): sanity + lint, the tests, the 2.16 and 2.21 jobs; builds the toolchain beside sanity
	hack/test.sh

.PHONY: demo
demo: venv toolchain ## Start the local cluster and run the main job (playbooks/site.yml) on it
	hack/demo.sh

.PHONY: bench
bench: venv toolchain ## Benchmark kueue_queues against kubernetes.core.k8s on 1,068 Kueue objects (~31 min, not a test; bench/README.md)
	$(VPY) bench/run.py $(BENCH_ARGS)

.PHONY: bench-scale
bench-scale: venv toolchain ## kueue_queues, kueue_backup and kueue_verify at 1x and 10x (1,068 / 10,680 objects; ~15 min, not a test; bench/README.md). SCALE_ARGS=--quick: 0.1x and 1x
	$(VPY) bench/scale.py $(SCALE_ARGS)

.PHONY: bench-upgrade
bench-upgrade: venv toolchain ## Benchmark playbooks/upgrade.yml 0.15.0 -> 0.19.2 against the upgrade by hand on 1,201 objects (~11 min, not a test; bench/README.md)
	$(VPY) bench/upgrade.py

.PHONY: ee-context
ee-context: venv toolchain ## Execution environment build context (ansible-builder create) in build/ee/context
	hack/ee-context.sh
