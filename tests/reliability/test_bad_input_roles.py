"""Bad-input corpus, role and playbook half (issue 8, item 1): every case is a host of a real ansible-playbook run
through an entry point of the kueue role (install/main, configure_queues, uninstall_with_backup) or a
playbook (site, configure_queues, uninstall, restore, migrate, status), or through a job role
(kueueops.aks.install, configure_queues, uninstall_with_backup) in a play's `roles:`, whose own argument
spec (its `main` entry point) refuses the case before the shared role runs, on the real local control plane
with Kueue installed with Helm and the repository's queue configuration (playbooks/vars/queues.yml)
applied, so that "unchanged" is meaningful: the resourceVersion of every queue object, namespace, CRD,
chart object and Helm release record (hence the release revision) is compared before and after.

Each case must fail safely (tests/reliability/badinput.py): the run fails, no traceback or MODULE
FAILURE, the message names the variable or object and says the fix, the cluster is unchanged. The
extension-path cases run against the ARM emulator and also assert that no write (PUT, PATCH, DELETE)
reached ARM.

The cases run in batches (issue 19; `_batch_of`): the cases of one playbook and inventory share one run, each
on a host of its own whose host variables are the case's variables, as a fleet with one bad input per cluster
(all hosts reach the one local cluster): the 64 cases take 16 runs instead of 64 (the file alone, its setup
included: 125 -> 49 s, 103 -> 57 CPU s). A case with its own environment or prepared object, a status.yml case (its report is run_once) and a job
role case run alone, with their variables as extra vars. The snapshot and the ARM request log are taken around
the whole run: any change fails every case of the batch (test_a_writing_host_fails_its_whole_batch).

Values in a case's data may hold {placeholders} filled at run time: {tmp} (a folder of this module),
{kubeconfig} (the cluster's), {backup} (a verified backup of the cluster taken in the setup),
{AKS_RESOURCE_GROUP} and {AKS_CLUSTER_NAME} (the emulator's cluster) and the prepared files below.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import socket
import sys

import pytest
import yaml

from tests.integration.ansible import REPO, VENV_BIN, aks_host, aks_inventory, run_playbook
from tests.integration.kubeutil import delete_namespaces, wait_for

from . import rbac
from .badinput import Case, assert_fails_safely, fake_extension_deployment

PLAYBOOK = os.path.join(REPO, "playbooks", "%s.yml")
HELM_INVENTORY = os.path.join(REPO, "playbooks", "inventory", "local.yml")
QUEUES_VARS = os.path.join(REPO, "playbooks", "vars", "queues.yml")
with open(QUEUES_VARS) as _handle:
    QUEUES = yaml.safe_load(_handle)
CONFIG = QUEUES["kueue_resources"]
API = "kueue.x-k8s.io/v1beta2"


def _queues_plus(*objects) -> dict:
    """The repository's queue configuration with `objects` added (what a user edits and re-applies)."""
    out = copy.deepcopy(QUEUES)
    out["kueue_resources"] = out["kueue_resources"] + list(objects)
    return out


def _cq(name, flavor="cpu-on-demand", cpu=4, cohort=None) -> dict:
    spec = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _lq(name, namespace, cluster_queue) -> dict:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue}}


def _with_aks(extra: dict | None = None) -> dict:
    """The emulator's AKS cluster (migrate.yml needs it even when the cluster is reached with a kubeconfig)."""
    out = {"kueue_aks_resource_group": "{AKS_RESOURCE_GROUP}", "kueue_aks_cluster_name": "{AKS_CLUSTER_NAME}"}
    out.update(extra or {})
    return out


def C(case_id, entry, names, fix, **data) -> Case:  # pylint: disable=invalid-name
    return Case(case_id, entry, names, fix, data)


SITE, CONFIGURE, UNINSTALL, RESTORE, MIGRATE, STATUS = (
    "site", "configure_queues", "uninstall", "restore", "migrate", "status")
ROLES = "roles"  # a play of one job role in `roles:` (data["role"]), written at run time

CASES = [
    # ---------------------------------------------------------------- install (site.yml -> role install/main)
    C("install-method-unknown", "install", ["kueue_install_method", "kubectl"], ["helm", "extension"],
      playbook=SITE, vars={"kueue_install_method": "kubectl"}),
    C("install-method-wrong-type", "install", ["kueue_install_method"], ["helm", "extension"],
      playbook=SITE, vars={"kueue_install_method": ["helm"]}),
    C("helm-options-on-extension", "install",
      ["kueue_install_method is extension", "kueue_feature_gates", "kueue_integrations", "kueue_helm_chart_ref"],
      ["kueue_install_method: helm", "remove them"],
      playbook=SITE, vars={"kueue_install_method": "extension", "kueue_aks_resource_group": "rg-batch",
                           "kueue_aks_cluster_name": "aks-batch"}),
    C("extension-options-on-helm", "install",
      ["kueue_install_method is helm", "kueue_extension_version"],
      ["kueue_install_method: extension", "remove it"],
      playbook=SITE, vars={"kueue_aks_cluster_name": "aks-batch", "kueue_extension_version": "0.14.2"}),
    C("chart-version-broken-patch", "install", ["kueue_version", "Kueue 0.20.3 is known to be broken"], ["0.20.6"],
      playbook=SITE, vars={"kueue_version": "0.20.3"}),
    C("extension-auto-upgrade-minor-on-helm", "install",
      ["kueue_install_method is helm", "kueue_extension_auto_upgrade_minor_version"], ["remove it"],
      playbook=SITE, vars={"kueue_extension_auto_upgrade_minor_version": True}),
    C("extension-auto-upgrade-minor-with-pin", "install",
      ["kueue_extension_auto_upgrade_minor_version", "kueue_extension_version", "0.19.2-aks.0.4.4"],
      ["remove one of the two"],
      playbook=SITE, vars={"kueue_install_method": "extension", "kueue_aks_resource_group": "rg-batch",
                           "kueue_aks_cluster_name": "aks-batch", "kueue_extension_auto_upgrade_minor_version": True,
                           "kueue_extension_version": "0.19.2-aks.0.4.4",
                           "kueue_install_ignore_other_path_options": True}),
    C("chart-version-malformed", "install", ["kueue_version", "0.x.1"], ["latest"],
      playbook=SITE, vars={"kueue_version": "0.x.1"}),
    C("chart-version-absent-from-registry", "install", ["kueue_version", "0.19.999"], ["published version"],
      playbook=SITE, vars={"kueue_version": "0.19.999"}),
    C("chart-version-wrong-type", "install", ["kueue_version", "major"], ["exact version"],
      playbook=SITE, vars={"kueue_version": {"major": 0, "minor": 19}}),
    C("feature-gate-unknown", "install", ["kueue_feature_gates", "NoSuchGate"], ["TopologyAwareScheduling"],
      playbook=SITE, vars={"kueue_feature_gates": {"NoSuchGate": True}}),
    C("feature-gates-wrong-type", "install", ["kueue_feature_gates"], ["dict"],
      playbook=SITE, vars={"kueue_feature_gates": ["TopologyAwareScheduling"]}),
    C("feature-gate-value-not-bool", "install", ["kueue_feature_gates", "TopologyAwareScheduling"], ["true", "false"],
      playbook=SITE, vars={"kueue_feature_gates": {"TopologyAwareScheduling": "sometimes"}}),
    C("integration-unknown", "install", ["kueue_integrations", "example.com/nojob"], ["batch/job"],
      playbook=SITE, vars={"kueue_integrations": ["batch/job", "example.com/nojob"]}),
    C("integrations-wrong-type", "install", ["kueue_integrations"], ["list"],
      playbook=SITE, vars={"kueue_integrations": {"batch/job": True}}),
    C("helm-values-misnested-manager-config", "install",
      ["kueue_helm_values", "controllerManager.managerConfig"], ["top-level"],
      playbook=SITE, vars={"kueue_helm_values": {"controllerManager": {"managerConfig": {
          "controllerManagerConfigYaml": "integrations:\n  frameworks: [batch/job]\n"}}}}),
    C("helm-values-config-not-a-string", "install",
      ["kueue_helm_values", "managerConfig.controllerManagerConfigYaml"], ["string"],
      playbook=SITE, vars={"kueue_helm_values": {"managerConfig": {"controllerManagerConfigYaml": {
          "integrations": {"frameworks": ["batch/job"]}}}}}),
    C("role-helm-values-file-missing", "install", ["kueue_helm_values_files", "{tmp}/no-such-values.yaml"], ["path"],
      playbook=SITE, vars={"kueue_helm_values_files": ["{tmp}/no-such-values.yaml"]}),
    C("helm-timeout-not-a-number", "install", ["kueue_helm_timeout"], ["int"],
      playbook=SITE, vars={"kueue_helm_timeout": "five minutes"}),
    C("registry-ca-file-missing", "install", ["kueue_helm_registry_ca_file", "{tmp}/no-such-ca.pem"], ["PEM file"],
      playbook=SITE, vars={"kueue_helm_plain_http": False, "kueue_helm_registry_ca_file": "{tmp}/no-such-ca.pem"}),
    C("registry-cert-without-key", "install", ["kueue_helm_registry_key_file", "registry_cert_file is set without"],
      ["or neither"], playbook=SITE, vars={"kueue_helm_plain_http": False,
                                           "kueue_helm_registry_cert_file": "{KUEUE_TLS_REGISTRY_CA}"}),
    C("registry-ca-untrusted", "install", ["kueue_helm_registry_ca_file", "cannot be verified"],
      ["kueue_helm_registry_insecure_skip_tls_verify"],
      playbook=SITE, vars={"kueue_helm_chart_ref": "{KUEUE_TLS_CHART_REF}", "kueue_helm_plain_http": False}),
    C("registry-options-on-extension", "install",
      ["kueue_install_method is extension", "kueue_helm_registry_ca_file", "kueue_helm_registry_insecure_skip_tls_verify"],
      ["kueue_install_method: helm"],
      playbook=SITE, vars={"kueue_install_method": "extension", "kueue_aks_resource_group": "rg-batch",
                           "kueue_aks_cluster_name": "aks-batch", "kueue_helm_registry_ca_file": "/etc/registry-ca.pem",
                           "kueue_helm_registry_insecure_skip_tls_verify": True}),
    # A new Helm option (kueue_helm's manager_priority_class) reaches the role with no edit of it: its variable is
    # refused on the extension path, and the module's refusal names it (hack/gen_role_specs.py).
    C("priority-class-on-extension", "install",
      ["kueue_install_method is extension", "kueue_helm_manager_priority_class"], ["kueue_install_method: helm"],
      playbook=SITE, vars={"kueue_install_method": "extension", "kueue_aks_resource_group": "rg-batch",
                           "kueue_aks_cluster_name": "aks-batch",
                           "kueue_helm_manager_priority_class": "system-cluster-critical"}),
    C("priority-class-missing", "install",
      ["kueue_helm_manager_priority_class", "PriorityClass batch-critical does not exist"],
      ["create the PriorityClass first"],
      playbook=SITE, vars={"kueue_helm_manager_priority_class": "batch-critical"}),
    C("chart-ref-unreachable", "install", ["kueue_helm_chart_ref", "127.0.0.1"], ["registry"],
      playbook=SITE, vars={"kueue_helm_chart_ref": "oci://127.0.0.1:{closed_port}/charts/kueue"}),
    # ---------------------------------------------------------------- environment
    C("helm-binary-missing", "install", ["kueue_helm_binary", "/nonexistent/bin/helm"], ["PATH"],
      playbook=SITE, vars={"kueue_helm_binary": "/nonexistent/bin/helm"}),
    C("helm-not-on-path", "install", ["kueue_helm_binary", "helm"], ["PATH"],
      playbook=SITE, env={"PATH": VENV_BIN + os.pathsep + "/usr/bin" + os.pathsep + "/bin"}),
    C("kubeconfig-missing", "install", ["kueue_kubeconfig", "{tmp}/no-such.kubeconfig"], ["path"],
      playbook=SITE, vars={"kueue_kubeconfig": "{tmp}/no-such.kubeconfig"}),
    C("kubeconfig-not-yaml", "configure_queues", ["kueue_kubeconfig", "{not_yaml}"], ["kubeconfig"],
      playbook=CONFIGURE, vars=dict(QUEUES, kueue_kubeconfig="{not_yaml}")),
    C("kubeconfig-no-current-context", "status", ["kueue_kubeconfig", "current-context"], ["use-context"],
      playbook=STATUS, vars={"kueue_kubeconfig": "{no_context}"}),
    C("kube-context-unknown", "uninstall_with_backup", ["kueue_kube_context", "no-such-context"], ["context"],
      playbook=UNINSTALL, vars={"kueue_kube_context": "no-such-context", "kueue_backup_dir": "{tmp}/backups-ctx"}),
    C("api-server-unreachable", "install", ["127.0.0.1:{closed_port}"], ["kueue_kubeconfig"],
      playbook=SITE, vars={"kueue_kubeconfig": "{unreachable}"}),
    C("api-server-unreachable-queues", "configure_queues", ["127.0.0.1:{closed_port}"], ["kueue_kubeconfig"],
      playbook=CONFIGURE, vars=dict(QUEUES, kueue_kubeconfig="{unreachable}")),
    # ---------------------------------------------------------------- configure_queues
    C("queue-aks-name-on-managed-extension", "configure_queues", ["aks-", "aks-gpu"], ["choose another name"],
      playbook=CONFIGURE, prepare="fake_extension",
      vars=dict(_queues_plus({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "aks-gpu"}}),
                kueue_namespace="corpus-roles-aks")),
    C("queue-dangling-flavor", "configure_queues", ["team-batch", "no-such-flavor"], ["ResourceFlavor"],
      playbook=CONFIGURE, vars=_queues_plus(_cq("team-batch", flavor="no-such-flavor"))),
    C("localqueue-dangling-clusterqueue", "configure_queues", ["team-nlp/batch", "no-such-cq"], ["ClusterQueue"],
      playbook=CONFIGURE, vars=_queues_plus(_lq("batch", "team-nlp", "no-such-cq"))),
    C("queue-quota-not-a-quantity", "configure_queues", ["team-batch", "nominalQuota"], ["quantity"],
      playbook=CONFIGURE, vars=_queues_plus(_cq("team-batch", cpu="lots"))),
    C("queue-missing-api-version", "configure_queues", ["apiVersion", "orphan"], [API],
      playbook=CONFIGURE, vars=_queues_plus({"kind": "ResourceFlavor", "metadata": {"name": "orphan"}})),
    C("queue-resources-wrong-type", "configure_queues", ["kueue_resources"], ["list"],
      playbook=CONFIGURE, vars={"kueue_resources": {"ResourceFlavor": "cpu-on-demand"}}),
    C("queue-resources-src-missing", "configure_queues", ["{tmp}/no-such-queues.yaml"], ["kueue_resources_src"],
      playbook=CONFIGURE, vars={"kueue_resources_src": "{tmp}/no-such-queues.yaml"}),
    C("capacity-check-invalid", "configure_queues", ["kueue_capacity_check", "loose"], ["warn, strict, off"],
      playbook=CONFIGURE, vars=dict(QUEUES, kueue_capacity_check="loose")),
    C("smoke-test-queue-without-namespace", "configure_queues", ["kueue_smoke_test_queues", "vision"],
      ["NAMESPACE/LOCALQUEUE"],
      playbook=CONFIGURE, vars=dict(QUEUES, kueue_smoke_test=True, kueue_smoke_test_queues=["vision"])),
    # ---------------------------------------------------------------- uninstall_with_backup (uninstall.yml)
    C("uninstall-without-backup-dir", "uninstall_with_backup", ["kueue_backup_dir"], ["missing required"],
      playbook=UNINSTALL, vars={}),
    C("uninstall-backup-dir-empty", "uninstall_with_backup", ["kueue_backup_dir"], ["folder"],
      playbook=UNINSTALL, vars={"kueue_backup_dir": ""}),
    C("uninstall-backup-dir-under-a-file", "uninstall_with_backup", ["{a_file}/backups"], ["kueue_backup_dir"],
      playbook=UNINSTALL, vars={"kueue_backup_dir": "{a_file}/backups"}),
    C("uninstall-api-server-unreachable", "uninstall_with_backup", ["127.0.0.1:{closed_port}"], ["kueue_kubeconfig"],
      playbook=UNINSTALL, vars={"kueue_backup_dir": "{tmp}/backups-unreachable", "kueue_kubeconfig": "{unreachable}"}),
    # ---------------------------------------------------------------- restore.yml
    C("restore-without-backup-path", "restore", ["kueue_backup_path"], ["uninstall.yml printed"],
      playbook=RESTORE, vars={}),
    C("restore-backup-folder-missing", "restore", ["{tmp}/no-such-backup"], ["kueue_backup_path"],
      playbook=RESTORE, vars={"kueue_backup_path": "{tmp}/no-such-backup"}),
    C("restore-backup-file-corrupt", "restore", ["{corrupt}", "clusterqueues"], ["kueue_backup_path"],
      playbook=RESTORE, vars={"kueue_backup_path": "{corrupt}"}),
    C("restore-backup-without-manifest", "restore", ["{no_manifest}", "manifest"], ["kueue_backup_path"],
      playbook=RESTORE, vars={"kueue_backup_path": "{no_manifest}"}),
    C("restore-backup-path-is-a-file", "restore", ["{a_file}"], ["kueue_backup_path"],
      playbook=RESTORE, vars={"kueue_backup_path": "{a_file}"}),
    # ---------------------------------------------------------------- migrate.yml
    C("migrate-target-unknown", "migrate", ["kueue_migrate_to"], ["extension or helm"],
      playbook=MIGRATE, vars=_with_aks({"kueue_migrate_to": "kubectl", "kueue_backup_dir": "{tmp}/backups-mig"})),
    C("migrate-without-backup-dir", "migrate", ["kueue_backup_dir"], ["folder"],
      playbook=MIGRATE, vars=_with_aks({"kueue_migrate_to": "extension"})),
    C("migrate-already-on-target", "migrate", ["already installed", "with Helm"], ["kueue_migrate_to=extension"],
      playbook=MIGRATE, arm=True, vars=_with_aks({"kueue_migrate_to": "helm", "kueue_backup_dir": "{tmp}/backups-mig"})),
    C("migrate-to-extension-foreign-aks-object", "migrate", ["aks-spot"], ["create them under another name"],
      playbook=MIGRATE, arm=True, prepare="aks_flavor",
      vars=_with_aks({"kueue_migrate_to": "extension", "kueue_backup_dir": "{tmp}/backups-mig"})),
    C("migrate-to-extension-unknown-cluster", "migrate", ["cluster_name", "no-such-aks"], ["kueue_aks_cluster_name"],
      playbook=MIGRATE, arm=True,
      vars=_with_aks({"kueue_migrate_to": "extension", "kueue_backup_dir": "{tmp}/backups-mig",
                      "kueue_aks_cluster_name": "no-such-aks"})),
    # ---------------------------------------------------------------- status.yml
    C("status-report-folder-missing", "status", ["kueue_status_report", "{tmp}/no-such-dir"], ["create the folder"],
      playbook=STATUS, vars={"kueue_status_report": "{tmp}/no-such-dir/status.md"}),
    C("status-namespace-without-kueue", "status", ["no-kueue-here", "deployment/kueue-controller-manager"],
      ["set kueue_namespace"],
      playbook=STATUS, vars={"kueue_namespace": "no-kueue-here"}),
    C("status-capacity-check-invalid", "status", ["kueue_capacity_check", "loose"], ["warn", "off"],
      playbook=STATUS, vars={"kueue_capacity_check": "loose"}),
    C("status-fail-on-error-not-a-bool", "status", ["kueue_status_fail_on_error", "perhaps"], ["set it to true"],
      playbook=STATUS, vars={"kueue_status_fail_on_error": "perhaps", "kueue_namespace": "no-kueue-here"}),
    # the drift report (issue 16): the declared configuration as configure_queues takes it, refused before any report
    C("status-drift-src-missing", "status", ["kueue_resources_src", "{tmp}/no-such-queues.yaml"],
      ["give a readable YAML file"], playbook=STATUS, vars={"kueue_resources_src": "{tmp}/no-such-queues.yaml"}),
    C("status-drift-src-unreadable", "status", ["kueue_resources_src", "{not_utf8}", "not UTF-8"],
      ["give a readable YAML file"], playbook=STATUS, vars={"kueue_resources_src": "{not_utf8}"}),
    C("status-drift-malformed-object", "status", ["LocalQueue", "status-nowhere", "spec.clusterQueue"],
      ["declare it in resources/src or correct the name"], playbook=STATUS,
      vars={"kueue_resources": [{"apiVersion": API, "kind": "LocalQueue",
                                 "metadata": {"name": "status-q", "namespace": "default"},
                                 "spec": {"clusterQueue": "status-nowhere"}}]}),
    C("status-fail-on-drift-not-a-bool", "status", ["kueue_fail_on_drift", "perhaps"], ["set it to true"],
      playbook=STATUS, vars={"kueue_fail_on_drift": "perhaps", "kueue_namespace": "no-kueue-here"}),
    C("status-fail-on-drift-without-declaration", "status", ["kueue_fail_on_drift", "no declared configuration"],
      ["kueue_resources_src"], playbook=STATUS, vars={"kueue_fail_on_drift": True}),
    # ---------------------------------------------------------------- extension path (ARM emulator)
    C("extension-without-aks-cluster", "install", ["kueue_aks_resource_group", "kueue_aks_cluster_name"],
      ["are required"], playbook=SITE, inventory="extension", arm=True,
      host={"kueue_aks_resource_group": "", "kueue_aks_cluster_name": ""}),
    C("role-extension-wrong-subscription", "install", ["subscription", "11111111-2222-3333-4444-555555555555"],
      ["kueue_azure_subscription_id"], playbook=SITE, inventory="extension", arm=True,
      vars={"kueue_azure_subscription_id": "11111111-2222-3333-4444-555555555555"}),
    C("role-extension-wrong-resource-group", "install", ["resource_group", "rg-no-such"], ["kueue_aks_resource_group"],
      playbook=SITE, inventory="extension", arm=True, vars={"kueue_aks_resource_group": "rg-no-such"}),
    C("role-extension-wrong-cluster-name", "install", ["cluster_name", "no-such-aks"], ["kueue_aks_cluster_name"],
      playbook=SITE, inventory="extension", arm=True, vars={"kueue_aks_cluster_name": "no-such-aks"}),
    C("extension-auto-upgrade-mode-unknown", "install", ["kueue_extension_auto_upgrade_mode", "always"],
      ["none", "patch", "compatible"], playbook=SITE, inventory="extension", arm=True,
      vars={"kueue_extension_auto_upgrade_mode": "always"}),
    C("role-extension-version-not-offered", "install", ["version", "0.1.0", "offered: "],
      ["kueue_extension_version", "omit version"], playbook=SITE, inventory="extension", arm=True,
      vars={"kueue_extension_version": "0.1.0"}),
    C("extension-over-unmanaged-kueue", "install", ["kueue-system/kueue-controller-manager"], ["playbooks/migrate.yml"],
      playbook=SITE, inventory="extension", arm=True, vars={}),
    # ---------------------------------------------------------------- job roles in roles: (their own argument spec)
    C("job-role-install-feature-gates-wrong-type", "install", ["kueue_feature_gates"], ["dict"],
      playbook=ROLES, role="kueueops.aks.install", vars={"kueue_feature_gates": ["TopologyAwareScheduling"]}),
    C("job-role-configure-queues-resources-wrong-type", "configure_queues", ["kueue_resources"], ["list"],
      playbook=ROLES, role="kueueops.aks.configure_queues", vars={"kueue_resources": {"ResourceFlavor": "cpu"}}),
    C("job-role-uninstall-include-secrets-not-a-bool", "uninstall_with_backup",
      ["kueue_backup_include_secrets", "perhaps"], ["bool"], playbook=ROLES, role="kueueops.aks.uninstall_with_backup",
      vars={"kueue_backup_dir": "{tmp}/backups-job-role", "kueue_backup_include_secrets": "perhaps"}),
    # ---------------------------------------------------------------- issue 40: confirmed, serial, bound to a cluster
    C("uninstall-unconfirmed", "uninstall_with_backup", ["not confirmed", "no terminal"], ["kueue_confirm_hosts=local"],
      playbook=UNINSTALL, confirm=False, vars={"kueue_backup_dir": "{tmp}/backups-unconfirmed"}),
    C("uninstall-confirms-another-host", "uninstall_with_backup", ["kueue_confirm_hosts names aks-prod",
                                                                   "not confirmed: local", "not targeted: aks-prod"],
      ["exactly the hosts the run targets"], playbook=UNINSTALL,
      vars={"kueue_backup_dir": "{tmp}/backups-other-host", "kueue_confirm_hosts": "aks-prod"}),
    C("uninstall-confirm-not-a-list", "uninstall_with_backup", ["kueue_confirm_hosts", "not a list of inventory host"],
      ["as a list or comma-separated"], playbook=UNINSTALL,
      vars={"kueue_backup_dir": "{tmp}/backups-confirm-dict", "kueue_confirm_hosts": {"local": True}}),
    C("uninstall-serial-not-a-number", "uninstall_with_backup", ["kueue_uninstall_serial", '"one"'],
      ["how many clusters change at a time"], playbook=UNINSTALL,
      vars={"kueue_backup_dir": "{tmp}/backups-serial", "kueue_uninstall_serial": "one"}),
    C("restore-serial-zero", "restore", ["kueue_restore_serial", '"0"'], ["how many clusters change at a time"],
      playbook=RESTORE, vars={"kueue_backup_path": "{backup}", "kueue_restore_reinstall": True,
                              "kueue_restore_serial": 0}),
    C("restore-allow-names-no-host-of-the-run", "restore", ["kueue_restore_allow_other_cluster", "aks-prod is not one"],
      ["leave it unset"], playbook=RESTORE,
      vars={"kueue_backup_path": "{backup}", "kueue_restore_allow_other_cluster": ["aks-prod"]}),
    C("restore-backup-of-another-cluster", "restore",
      ["verify_path", "taken from another cluster", "uid-of-another-cluster"],
      ["kueue_restore_allow_other_cluster", "nothing was changed"], playbook=RESTORE,
      vars={"kueue_backup_path": "{foreign}"}),
    C("migrate-serial-percentage-over-100", "migrate", ["kueue_migrate_serial", '"150%"'],
      ["how many clusters change at a time"], playbook=MIGRATE,
      vars=_with_aks({"kueue_migrate_to": "extension", "kueue_backup_dir": "{tmp}/backups-mig-serial",
                      "kueue_migrate_serial": "150%"})),
    C("status-token-horizon-not-seconds", "status", ["kueue_multikueue_token_warn_horizon", '"a week"'],
      ["604800"], playbook=STATUS, vars={"kueue_multikueue_token_warn_horizon": "a week"}),
    C("configure-smoke-test-without-localqueues", "configure_queues", ["kueue_smoke_test_queues",
                                                                       "declares no LocalQueue"],
      ["kueue_smoke_test to false", "Nothing was changed"], playbook=CONFIGURE,
      vars={"kueue_smoke_test": True, "kueue_resources": [
          {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "corpus-smoke-only"}}]}),
]


# ------------------------------------------------------------------ setup
def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write(path, text) -> str:
    with open(path, "w") as handle:
        handle.write(text)
    return str(path)


def _write_bytes(path, data: bytes) -> str:
    with open(path, "wb") as handle:
        handle.write(data)
    return str(path)


@pytest.fixture(scope="module")
def setup(cluster, kueue, tmp_path_factory):
    """Kueue installed (the `kueue` fixture), playbooks/vars/queues.yml applied through
    playbooks/configure_queues.yml, a verified backup of it, and the bad files of the cases."""
    from kubernetes import client

    kube = kueue
    core = client.CoreV1Api(kube)
    teams = ["team-vision", "team-nlp"]
    existing = {ns.metadata.name for ns in core.list_namespace().items}
    res = run_playbook(PLAYBOOK % CONFIGURE, extravars=QUEUES, inventory=HELM_INVENTORY)
    assert res.rc == 0, res.stdout[-4000:]
    tmp = tmp_path_factory.mktemp("bad-input-roles")
    backup_task = {"name": "Back up", "kueueops.aks.kueue_backup": {
        "dest": str(tmp / "backups"), "verify": True, "kubeconfig": "{{ kueue_kubeconfig }}"}}
    res = run_playbook([{"name": "Backup", "hosts": "local", "gather_facts": False, "tasks": [backup_task]}],
                       inventory=HELM_INVENTORY)
    assert res.rc == 0, res.stdout[-4000:]
    backup = res.result("Back up")["backup_path"]
    corrupt = str(tmp / "corrupt")
    shutil.copytree(backup, corrupt)
    cq_files = [f for f in os.listdir(corrupt) if "clusterqueue" in f.lower()]
    assert cq_files, os.listdir(corrupt)
    with open(os.path.join(corrupt, cq_files[0]), "a") as handle:
        handle.write("# edited by hand\n")
    foreign = str(tmp / "foreign")  # the same backup, as a backup of another cluster records it (issue 40)
    shutil.copytree(backup, foreign)
    with open(os.path.join(foreign, "manifest.json")) as handle:
        manifest = json.load(handle)
    manifest["cluster"].update(uid="uid-of-another-cluster", context="aks-prod")
    with open(os.path.join(foreign, "manifest.json"), "w") as handle:
        json.dump(manifest, handle)
    no_manifest = str(tmp / "no-manifest")
    os.makedirs(no_manifest)
    shutil.copy(os.path.join(backup, cq_files[0]), no_manifest)
    port = _closed_port()
    with open(cluster.kubeconfig) as handle:
        kc = yaml.safe_load(handle)
    unreachable = copy.deepcopy(kc)
    for entry in unreachable["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:%d" % port
    no_context = copy.deepcopy(kc)
    no_context.pop("current-context", None)
    ctx = {
        "tmp": str(tmp), "kubeconfig": cluster.kubeconfig, "backup": backup, "corrupt": corrupt, "foreign": foreign,
        "no_manifest": no_manifest, "closed_port": str(port),
        "a_file": _write(tmp / "a-file", "not a folder\n"),
        "not_utf8": _write_bytes(tmp / "not-utf8.yaml", b"kind: ResourceFlavor\nmetadata: {name: \xff\xfe}\n"),
        "not_yaml": _write(tmp / "not-yaml.kubeconfig", "this is {not: yaml: at all\n\t- ]\n"),
        "no_context": _write(tmp / "no-context.kubeconfig", yaml.safe_dump(no_context)),
        "unreachable": _write(tmp / "unreachable.kubeconfig", yaml.safe_dump(unreachable)),
    }
    yield {"kube": kube, "ctx": ctx, "tmp": tmp, "cluster": cluster}
    custom = client.CustomObjectsApi(kube)
    for obj in reversed(CONFIG):
        plural = rbac.KUEUE_PLURALS[obj["kind"]]
        meta = obj["metadata"]
        try:
            if meta.get("namespace"):
                custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", meta["namespace"], plural,
                                                       meta["name"])
            else:
                custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, meta["name"])
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
    delete_namespaces(kube, [ns for ns in teams if ns not in existing], wait=False)


def _fill(value, ctx: dict):
    if isinstance(value, str):
        for key, sub in ctx.items():
            value = value.replace("{%s}" % key, sub)
        return value
    if isinstance(value, dict):
        return {_fill(k, ctx): _fill(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ctx) for v in value]
    return value


def _extension_hostvars(host_overrides: dict) -> dict:
    return dict({"kueue_install_method": "extension",
                 "kueue_kubeconfig": "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"}, **host_overrides)


def _extension_inventory(path, host_overrides: dict) -> str:
    return aks_inventory(path, **_extension_hostvars(host_overrides))


def _aks_flavor(kube):
    """An aks- ResourceFlavor of the Helm install, which the managed extension would not recreate."""
    from kubernetes import client

    custom = client.CustomObjectsApi(kube)
    body = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "aks-spot"},
            "spec": {"nodeLabels": {"kubernetes.azure.com/scalesetpriority": "spot"}}}
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", body)

    def gone():
        try:
            custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", "aks-spot")
            return False
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
            return True

    def cleanup():
        # Kueue's finalizer makes the deletion asynchronous: wait, so the next case's snapshot is stable.
        custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", "aks-spot")
        wait_for("the aks-spot ResourceFlavor to be deleted", gone, timeout=60)
    return cleanup


AKS_NS = "corpus-roles-aks"


def _fake_extension(kube):
    """The managed extension as kueue_queues detects it, in a namespace of its own (deleted afterwards)."""
    from kubernetes import client

    client.CoreV1Api(kube).create_namespace({"metadata": {"name": AKS_NS}})
    fake_extension_deployment(kube, AKS_NS)
    return lambda: delete_namespaces(kube, [AKS_NS])


PREPARE = {"aks_flavor": _aks_flavor, "fake_extension": _fake_extension}


def _batch_of(case) -> tuple:
    """The cases that share one ansible-playbook run (issue 19): those of one playbook and inventory, each on a host
    of its own whose host variables are the case's variables (a fleet of N hosts on the one local cluster, each with
    one bad input). Alone, with its variables as extra vars (-e, as the cases ran before batching): a case that
    needs its own environment or a prepared object, and status.yml's cases (its report tasks are run_once across
    the play's hosts), the job role cases (each a play of its own role in `roles:`; a play whose every host
    failed ends the run, so two such plays cannot share one), and the cases of uninstall.yml, restore.yml and
    migrate.yml (issue 40: they run serial and stop at the first failed host, so one case per run; each gets the
    confirmation kueue_confirm_hosts=local unless it is what the case tests)."""
    data = case.data
    if data.get("env") or data.get("prepare") or data["playbook"] in (STATUS, ROLES, UNINSTALL, RESTORE, MIGRATE):
        return ("alone", case.id)
    return (data["playbook"], data.get("inventory", "helm"))


def _inventory_host(case, ctx: dict) -> dict:
    """The host variables of `case` in a batch: the repository's local host (or the emulator's AKS host for the
    extension cases), then the case's own variables over them."""
    if case.data.get("inventory") == "extension":
        host = aks_host(**_extension_hostvars(_fill(case.data.get("host", {}), ctx)))
    else:
        with open(HELM_INVENTORY) as handle:
            host = dict(yaml.safe_load(handle)["kueue_clusters"]["hosts"]["local"])
    host.update(_fill(case.data.get("vars", {}), ctx))
    return host


def _context(setup) -> dict:
    ctx = dict(setup["ctx"])
    ctx.update({k: os.environ.get(k, "") for k in (
        "AKS_RESOURCE_GROUP", "AKS_CLUSTER_NAME", "KUEUE_TLS_CHART_REF", "KUEUE_TLS_REGISTRY_CA")})
    return ctx


def run_cases(cases: list, setup, request, folder) -> dict:
    """Run `cases` (one batch, see _batch_of) in ONE ansible-playbook run; returns {case id: (result, host,
    before, after, ARM writes or None)}. A batch runs its playbook on an inventory of one host per case; the
    snapshot and the ARM request log are taken before and after the whole run, so a change by any case fails every case of its batch (each is judged on the same
    before/after: a change is never missed, only not told apart inside the batch)."""
    kube, ctl = setup["kube"], None
    if any(c.data.get("arm") for c in cases):
        from tests.emulators.arm.control import Control

        arm = request.getfixturevalue("arm")
        ctl = Control(arm.url, arm.ca_path)
        ctl.reset()  # as the arm_control fixture does before and after a test
    ctx = _context(setup)  # after the emulator is up: its AKS_* are in the environment
    alone = _batch_of(cases[0])[0] == "alone"
    data = cases[0].data
    if alone:
        hosts = ["local"]
        inventory = HELM_INVENTORY
        if data.get("inventory") == "extension":
            inventory = _extension_inventory(folder / "ext.yml", _fill(data.get("host", {}), ctx))
        extravars, env = _fill(data.get("vars", {}), ctx), _fill(data.get("env"), ctx)
        if data["playbook"] in (UNINSTALL, RESTORE, MIGRATE) and data.get("confirm", True):
            extravars = dict({"kueue_confirm_hosts": "local"}, **extravars)
    else:
        hosts = [c.id for c in cases]
        inventory = str(folder / "batch.yml")
        with open(inventory, "w") as handle:
            yaml.safe_dump({"kueue_clusters": {"hosts": {c.id: _inventory_host(c, ctx) for c in cases}}}, handle)
        extravars, env = None, None
    playbook = PLAYBOOK % data["playbook"]
    if data["playbook"] == ROLES:
        playbook = [{"name": "A job role", "hosts": "kueue_clusters", "connection": "local", "gather_facts": False,
                     "roles": [data["role"]]}]
    cleanup = PREPARE[data["prepare"]](kube) if data.get("prepare") else None
    try:
        before = rbac.snapshot(kube)
        if ctl is not None:
            ctl.clear_requests()
        result = run_playbook(playbook, extravars=extravars, inventory=inventory, env=env,
                              timeout=300 + 120 * len(cases))
        after = rbac.snapshot(kube)
        writes = ctl.writes() if ctl is not None else None
    finally:
        if cleanup:
            cleanup()
        if ctl is not None:
            ctl.reset()
    return {c.id: (result, host, before, after, writes) for c, host in zip(cases, hosts)}


@pytest.fixture(scope="module")
def batches(setup, request, tmp_path_factory):
    """The selected cases, run once per batch (see _batch_of) and cached: the first test of a batch runs it,
    every test asserts on its own case's host."""
    selected = {item.callspec.params["case"].id for item in request.session.items
                if item.originalname == "test_bad_input_fails_safely" and hasattr(item, "callspec")}
    done = {}

    def record(case):
        key = _batch_of(case)
        if key not in done:
            cases = [c for c in CASES if _batch_of(c) == key and (c.id in selected or c.id == case.id)]
            done[key] = run_cases(cases, setup, request, tmp_path_factory.mktemp("batch"))
        return done[key][case.id]
    return record


def assert_case(case, record, ctx: dict) -> str:
    """Every per-case assertion of the role corpus on one case's host of its run."""
    result, host, before, after, writes = record
    filled = Case(case.id, case.entry, _fill(case.names, ctx), _fill(case.fix, ctx), case.data)
    message = assert_fails_safely(filled, result, None, before, host=host, after=after)
    # printed once: one failed task, the one whose message names the role variables (no rescue repeats it)
    failed = [name for name, r in result.tasks(host) if r.get("failed")]
    assert len(failed) <= 1, "%s: the failure is reported by %d tasks: %s" % (case.id, len(failed), failed)
    if case.data["playbook"] == ROLES:
        # refused by the job role's own spec (its main entry point), not by the shared role's after it
        failed = [r for _name, r in result.tasks(host) if r.get("failed")]
        assert [r.get("validate_args_context") for r in failed] == [{
            "argument_spec_name": "main", "name": case.data["role"].split(".")[-1], "type": "role",
            "path": failed[0]["validate_args_context"]["path"]}], failed
    if case.data.get("arm"):
        assert writes == [], "%s: its run wrote to ARM: %s" % (case.id, writes)
    if os.environ.get("KUEUEOPS_SHOW_MESSAGES"):
        sys.stderr.write("\n[%s] %s\n" % (case.id, message))
    return message


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_fails_safely(case, setup, batches):
    assert_case(case, batches(case), _context(setup))


def test_a_writing_host_fails_its_whole_batch(setup, request, tmp_path):
    """The batching's self-test: in a batch of three site.yml cases, the middle host also writes (a ConfigMap in
    kueue-system, which the snapshot covers) before failing; every case of the batch is then reported as having
    changed the cluster (none can pass on a snapshot it shares with a writer), and each passes run without it."""
    install = [c for c in CASES if _batch_of(c) == (SITE, "helm")][:2]
    writer = Case("selftest-writes", "install", [], [], {"playbook": SITE})
    cases = [install[0], writer, install[1]]
    kube, ctx = setup["kube"], _context(setup)
    inventory = str(tmp_path / "batch.yml")
    hosts = {c.id: _inventory_host(c, ctx) for c in cases}
    with open(inventory, "w") as handle:
        yaml.safe_dump({"kueue_clusters": {"hosts": hosts}}, handle)
    create = {"name": "Write, then fail", "ansible.builtin.command": "kubectl --kubeconfig %s -n kueue-system "
              "create configmap corpus-roles-selftest" % setup["ctx"]["kubeconfig"], "failed_when": True,
              "when": "inventory_hostname == %r" % writer.id}
    playbook = [{"name": "The writer", "hosts": "kueue_clusters", "connection": "local", "gather_facts": False,
                 "tasks": [create]}, {"import_playbook": PLAYBOOK % SITE}]
    before = rbac.snapshot(kube)
    try:
        result = run_playbook(playbook, inventory=inventory)
        after = rbac.snapshot(kube)
    finally:
        rbac.kubectl(setup["cluster"], "-n", "kueue-system", "delete", "configmap", "corpus-roles-selftest",
                     "--ignore-not-found")
    for case in (install[0], install[1]):
        with pytest.raises(AssertionError, match=r"%s changed the cluster: .*corpus-roles-selftest" % case.id):
            assert_case(case, (result, case.id, before, after, None), ctx)
    alone = run_cases(install, setup, request, tmp_path)
    for case in install:
        assert_case(case, alone[case.id], ctx)


def test_the_corpus_is_large_enough_and_covers_every_entry_point():
    assert len(CASES) >= 20
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.data["playbook"] for c in CASES} == {SITE, CONFIGURE, UNINSTALL, RESTORE, MIGRATE, STATUS, ROLES}
    assert {c.data["role"] for c in CASES if c.data["playbook"] == ROLES} == {
        "kueueops.aks.install", "kueueops.aks.configure_queues", "kueueops.aks.uninstall_with_backup"}
    assert {c.entry for c in CASES} >= {"install", "configure_queues", "uninstall_with_backup", "restore",
                                        "migrate", "status"}
