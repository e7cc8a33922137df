"""The kueue-extension Pod's process: keeps the AKS-owned Kueue objects present, as AKS's
extension does, and serves /readyz (200 while the last reconcile, at most 10 s ago, succeeded).

Run by the harness node agent for the kueue-extension Deployment's Pod, with KUBECONFIG
(the Pod's service account) and HEALTH_PROBE_BIND_ADDRESS (host:port for /readyz).
"""
from __future__ import annotations

import http.server
import json
import os
import signal
import ssl
import threading
import time
import urllib.error
import urllib.request

import yaml

GROUP = "kueue.x-k8s.io"
LABELS = {"app.kubernetes.io/managed-by": "aks-kueue-extension", "kubernetes.azure.com/managedby": "aks"}
PRIORITIES = {"aks-low-priority": 100, "aks-medium-priority": 500, "aks-high-priority": 1000}
INTERVAL = 2.0


class Client:
    def __init__(self, kubeconfig_path: str):
        with open(kubeconfig_path) as handle:
            cfg = yaml.safe_load(handle)
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        self.server = cluster["server"]
        self.ctx = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self.ctx.load_cert_chain(user["client-certificate"], user["client-key"])

    def call(self, method: str, path: str, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            if err.code == 404 and method == "GET":
                return None
            raise


def desired(version: str) -> list[tuple[str, dict]]:
    """(collection path, object) for each AKS-owned object."""
    api = "%s/%s" % (GROUP, version)
    out = [("/apis/%s/resourceflavors" % api,
            {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": "aks-cpu", "labels": LABELS}, "spec": {}})]
    for name, value in PRIORITIES.items():
        out.append(("/apis/%s/workloadpriorityclasses" % api,
                    {"apiVersion": api, "kind": "WorkloadPriorityClass", "metadata": {"name": name, "labels": LABELS},
                     "value": value, "description": "AKS-managed priority class (%d)" % value}))
    return out


class Controller:
    def __init__(self, client: Client):
        self.client = client
        self.last_ok = 0.0
        self.stopping = False

    def reconcile(self) -> None:
        group = self.client.call("GET", "/apis/" + GROUP)
        if not group:
            raise RuntimeError("Kueue's API group is not served")
        for path, obj in desired(group["preferredVersion"]["version"]):
            name = obj["metadata"]["name"]
            if self.client.call("GET", "%s/%s" % (path, name)) is None:
                self.client.call("POST", path, obj)
                print("created %s %s" % (obj["kind"], name), flush=True)

    def run(self) -> None:
        while not self.stopping:
            try:
                self.reconcile()
                self.last_ok = time.time()
            except (OSError, RuntimeError, ValueError) as exc:
                print("reconcile failed: %s" % exc, flush=True)
            time.sleep(INTERVAL)

    def ready(self) -> bool:
        return time.time() - self.last_ok < 10


def main() -> None:
    controller = Controller(Client(os.environ["KUBECONFIG"]))
    host, _, port = os.environ["HEALTH_PROBE_BIND_ADDRESS"].rpartition(":")

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - BaseHTTPRequestHandler's naming
            ok = self.path in ("/readyz", "/healthz") and (self.path == "/healthz" or controller.ready())
            self.send_response(200 if ok else 503)
            self.end_headers()
            self.wfile.write(b"ok" if ok else b"not ready")

        def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's signature
            pass

    server = http.server.ThreadingHTTPServer((host or "127.0.0.1", int(port)), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(*_):
        controller.stopping = True
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    controller.run()
    server.shutdown()


if __name__ == "__main__":
    main()
