"""A client of the emulator's control endpoint (/_emulator/...): fault and property switches,
the request log. Every switch stays until `reset()`.

    ctl = Control.from_run_dir()
    ctl.fault(429, count=2, method="PUT", path="/extensions/")   # the next 2 matching requests get 429
    ctl.cluster(kubernetesVersion="1.33.2", sku={"name": "Automatic", "tier": "Standard"})
    ctl.provisioning(fail={"code": "ExtensionOperationFailed", "message": "boom"})
    assert not ctl.requests(method="PUT")
    ctl.reset()
"""
from __future__ import annotations

import json
import ssl
import urllib.request

from .emulator import ArmEmulator


class Control:
    def __init__(self, url: str, ca_path: str):
        self.url = url.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca_path)

    @classmethod
    def from_run_dir(cls, folder: str | None = None) -> "Control":
        emulator = ArmEmulator(folder)
        return cls(emulator.url, emulator.ca_path)

    def call(self, method: str, what: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("%s/_emulator/%s" % (self.url, what), data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as resp:
            return json.loads(resp.read() or b"{}")

    def reset(self) -> None:
        """Clear faults, provisioning switches, cluster properties (back to the defaults) and the request log."""
        self.call("POST", "reset")

    def fault(self, status: int, count: int = 1, method: str | None = None, path: str | None = None,
              retry_after: int = 1) -> dict:
        """Answer the next `count` ARM requests matching `method` and a `path` substring with `status`
        (429 carries Retry-After: `retry_after`; 403 is ARM's AuthorizationFailed for the request's action)."""
        return self.call("POST", "faults", {"status": status, "count": count, "method": method, "path": path,
                                            "retry_after": retry_after})

    def provisioning(self, delay_seconds: float = 0, fail: dict | None = None) -> dict:
        """Every following extension operation waits `delay_seconds` first; with `fail`
        ({"code", "message"}), creates and updates end Failed with that errorInfo (only the next
        `fail["count"]` of them when it is given)."""
        return self.call("POST", "provisioning", {"delay_seconds": delay_seconds, "fail": fail})

    def offers(self, trains: dict) -> dict:
        """Narrow the versions of microsoft.kueue each release train offers ({"stable": []}: none), for both the
        extension types API and installs; reset() offers every local chart version in both trains again."""
        return self.call("POST", "offers", trains)

    def cluster(self, **properties) -> dict:
        """Merge `properties` into the managed cluster's properties (kubernetesVersion,
        currentKubernetesVersion, sku, nodeProvisioningProfile, agentPoolProfiles...); returns the cluster."""
        return self.call("PATCH", "cluster", properties)

    def agent_pools(self, *profiles: dict) -> dict:
        """The cluster's agentPoolProfiles become the system pool nodepool1 and these pools (ManagedClusterAgentPoolProfile
        fields: name, vmSize, count, enableAutoScaling, minCount, maxCount, maxPods, nodeLabels, nodeTaints,
        scaleSetPriority, mode...), each completed as ARM returns it; reset() restores nodepool1 alone."""
        return self.call("PUT", "agentpools", list(profiles))

    def requests(self, method: str | None = None, path: str | None = None) -> list[dict]:
        """The ARM and token requests received since the last reset: method, path, status, time."""
        items = self.call("GET", "requests")["requests"]
        return [r for r in items if (not method or r["method"] == method.upper())
                and (not path or path.lower() in r["path"].lower())]

    def writes(self, path: str | None = None, methods=("PUT", "PATCH", "DELETE")) -> list[tuple]:
        """(method, path) of the requests since the last reset that would change something in ARM
        (``methods``), optionally only those whose path contains ``path``."""
        return [(r["method"], r["path"]) for r in self.requests(path=path) if r["method"] in methods]

    def clear_requests(self) -> None:
        self.call("DELETE", "requests")

    def extensions(self) -> list[dict]:
        """The emulator's extension records (as GET returns them, plus namespace and installed)."""
        return self.call("GET", "extensions")["extensions"]
