"""Start, stop and describe the ARM emulator of a run folder ($KUEUEOPS_RUN_DIR/arm/)."""
from __future__ import annotations

import json
import os
import secrets
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid

from tests.harness import pki

from .kube import ExtensionInstaller
from tests.harness.cluster import REPO, Cluster, HarnessError, free_port, pid_alive, run_dir, stop_pid

MARKER = "tests.emulators.arm.server"
# Fixed identities, so that logs and recorded requests read the same on every run.
SUBSCRIPTION_ID = "00000000-0000-4000-8000-00000000a001"
TENANT_ID = "00000000-0000-4000-8000-00000000e001"
CLIENT_ID = "00000000-0000-4000-8000-00000000c001"
RESOURCE_GROUP = "kueueops-rg"
CLUSTER_NAME = "kueueops-aks"
LOCATION = "westeurope"
# The client secret is random per start; the prefix makes it recognisable in any log a leak could reach
# (tests/reliability/test_secrets.py greps for it), without making it guessable.
CLIENT_SECRET_PREFIX = "kueueops-FAKE-arm-secret-"


class ArmEmulator:
    """A handle on the emulator whose state is in `<run folder>/arm`."""

    def __init__(self, folder: str | None = None):
        self.folder = folder or run_dir()
        self.dir = os.path.join(self.folder, "arm")
        self.state_path = os.path.join(self.dir, "state.json")
        self.config_path = os.path.join(self.dir, "config.json")

    def _read(self, path: str) -> dict:
        try:
            with open(path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    @property
    def state(self) -> dict:
        return self._read(self.state_path)

    @property
    def config(self) -> dict:
        return self._read(self.config_path)

    @property
    def url(self) -> str:
        return self.config["url"]

    @property
    def ca_path(self) -> str:
        return os.path.join(self.dir, "pki", "ca.crt")

    def running(self) -> bool:
        state = self.state
        if not state.get("pid") or not pid_alive(state["pid"], MARKER):
            return False
        try:
            ctx = ssl.create_default_context(cafile=self.ca_path)
            with urllib.request.urlopen(self.url + "/_emulator/health", context=ctx, timeout=3) as resp:
                return resp.status == 200
        except OSError:
            return False

    def up(self) -> None:
        if self.running():
            return
        cluster = Cluster(self.folder)
        if not cluster.running():
            raise HarnessError("no local cluster runs in %s: run `make cluster-up` first" % self.folder)
        self.down()
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        ca = pki.CA(os.path.join(self.dir, "pki"))
        ca.issue(os.path.join(self.dir, "server"), "localhost", dns_names=["localhost"], ip_addresses=["127.0.0.1"],
                 server=True)
        port = free_port()
        config = {
            "url": "https://127.0.0.1:%d" % port, "port": port,
            "subscription_id": SUBSCRIPTION_ID, "tenant_id": TENANT_ID, "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET_PREFIX + secrets.token_urlsafe(24),
            "principal_object_id": str(uuid.uuid5(uuid.NAMESPACE_URL, CLIENT_ID)),
            "resource_group": RESOURCE_GROUP, "cluster_name": CLUSTER_NAME, "location": LOCATION,
            # the managed cluster reports the Kubernetes the local control plane runs
            "kubernetes_version": cluster.kubernetes_version(),
        }
        fd = os.open(self.config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(config, handle, indent=2)
        os.makedirs(cluster.path("logs"), exist_ok=True)
        with open(cluster.path("logs", "arm-emulator.log"), "ab") as logf:
            proc = subprocess.Popen([sys.executable, "-m", MARKER, self.folder], stdout=logf, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=REPO, start_new_session=True,
                                    env=dict(os.environ, PYTHONPATH=REPO))
        with open(self.state_path, "w") as handle:
            json.dump({"pid": proc.pid, "started": time.time()}, handle)
        deadline = time.time() + 30
        while not self.running():
            if proc.poll() is not None or time.time() > deadline:
                self.down()
                raise HarnessError("the ARM emulator did not start; see %s" % cluster.path("logs", "arm-emulator.log"))
            time.sleep(0.2)

    def down(self) -> bool:
        """Stop the emulator if it runs; True if there was one."""
        state = self.state
        if not state.get("pid"):
            return False
        stop_pid(state["pid"], MARKER, timeout=10)
        os.unlink(self.state_path)
        return True

    def env(self) -> dict:
        """What a playbook or test needs to reach the emulator (the azure.azcollection names), and the versions of
        microsoft.kueue it offers, in AKS's form, newest first (KUEUE_EXTENSION_VERSIONS: the chart versions of
        KUEUE_CHART_VERSIONS as 0.19.2-aks.0.4.4)."""
        cfg = self.config
        return {
            "AZURE_SUBSCRIPTION_ID": cfg["subscription_id"],
            "AZURE_CLIENT_ID": cfg["client_id"],
            "AZURE_SECRET": cfg["client_secret"],
            "AZURE_TENANT": cfg["tenant_id"],
            "AZURE_CLOUD_ENVIRONMENT": cfg["url"] + "/",
            "AZURE_AUTHORITY_HOST": cfg["url"],
            "AZURE_CA_BUNDLE": self.ca_path,
            "AKS_RESOURCE_GROUP": cfg["resource_group"],
            "AKS_CLUSTER_NAME": cfg["cluster_name"],
            "KUEUE_EXTENSION_VERSIONS": " ".join(ExtensionInstaller(self.folder).extension_versions()),
        }
