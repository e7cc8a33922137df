"""The node agent: plays the kubelet for the Kueue manager, and only for it (plus the
kueue-extension Pod of the ARM emulator's AKS extension, see ExtensionPod).

It registers one Node, binds the Kueue controller-manager Pods that the
Deployment's ReplicaSet creates, and runs the real Kueue manager binary of the
Pod's image version as a local process, configured from the chart's own
ConfigMap and args. The Pod's Ready condition follows the process's /readyz, so
the Deployment's readiness as the API server reports it is the real process's.

Fix-ups that a kubelet + CNI would make unnecessary, re-applied on every pass
(so a Helm upgrade that reverts them is corrected within FIXUP_STEADY seconds, 2):
- the webhook server binds the webhook Service's ClusterIP:port, which the
  harness allocates from a range inside 127.0.0.0/8;
- the certificate that Kueue's internal cert management writes into its Secret
  is copied into the manager's cert dir (what a kubelet's secret volume does);
- managers older than 0.18 run with VisibilityOnDemand=false and their visibility
  APIServices are deleted (they cannot bind the visibility server to loopback).

Failure drills: the file agent/hold keeps the manager stopped (`python -m tests.harness
hold`); a hold naming image tags, one a line (`python -m tests.harness hold v0.17.0`), keeps
only the managers of those tags from starting, as an upgrade whose new Pods never turn ready
while the old ones keep serving; agent/block-visibility stops proxying the visibility Service only (`python -m
tests.harness visibility-block`), so the aggregator finds its APIServices unreachable
(FailedDiscoveryCheck) while the manager stays ready, as with a NetworkPolicy in the way.

Run: python -m tests.harness.agent RUN_DIR   (started and stopped by cluster.py)
"""
from __future__ import annotations

import datetime
import http.client
import json
import os
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from . import pki
from .files import write_if_changed

NODE = "kueueops-local"
VISIBILITY_GROUP_SUFFIX = "visibility.kueue.x-k8s.io"
BACKOFF = (2, 5, 10, 20, 40)
# The loop's pace: FAST while anything moves and for BUSY_SECONDS after; when all is still, every STEADY seconds, a
# kubelet's default readinessProbe periodSeconds (and the Kueue chart's), or every FIXUP_STEADY seconds while a
# manager runs whose visibility APIServices the agent deletes (fixups: a Helm upgrade recreates them without a Pod
# event). The wait between passes looks at the drill flags and the processes every TICK, and a Pod event wakes it
# (the pod watch). NODE_HEARTBEAT: how often the Node's Ready condition is renewed (no movement: it keeps the pace
# steady). WATCH_SECONDS: one pod watch's length.
FAST, STEADY, FIXUP_STEADY, BUSY_SECONDS, TICK = 0.5, 10.0, 2.0, 5.0, 0.25
NODE_HEARTBEAT, WATCH_SECONDS = 20, 300
# The image of the kueue-extension Deployment that tests/emulators/arm installs.
EXTENSION_IMAGE = "kueueops.local/aks/kueue-extension:"


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(msg: str) -> None:
    print("[agent %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Api:
    """The agent's client: one kept-alive HTTPS connection (a new TLS handshake per request, several a second,
    was most of an idle cluster's CPU), opened again once when the server has closed it."""

    def __init__(self, server: str, ca: str, cert: str, key: str):
        self.server = server
        parsed = urllib.parse.urlsplit(server)
        self.host, self.port = parsed.hostname, parsed.port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)
        self.conn = None
        self.lock = threading.Lock()
        self.writes = 0  # non-GET calls so far: the loop keeps its fast pace after a pass that wrote

    def connect(self, timeout: float = 10) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, method: str, path: str, body=None, content_type="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        if method != "GET":
            self.writes += 1
        with self.lock:
            for attempt in (1, 2):
                reused = self.conn is not None
                if not reused:
                    self.conn = self.connect()
                try:
                    self.conn.request(method, path, body=data, headers=headers)
                    resp = self.conn.getresponse()
                    raw = resp.read()
                    break
                except (http.client.HTTPException, OSError):
                    self.close()
                    if not reused or attempt == 2:  # a kept connection the server closed: once more, on a new one
                        raise
        if resp.status == 404:
            return None
        if resp.status >= 400:
            raise urllib.error.HTTPError(self.server + path, resp.status, raw.decode(errors="replace")[:500],
                                         resp.headers, None)
        return json.loads(raw) if raw else {}

    def get(self, path):
        return self.call("GET", path)

    def merge(self, path, body):
        return self.call("PATCH", path, body, "application/merge-patch+json")


class Manager:
    """One Kueue manager process standing in for one Pod."""

    kueue = True

    def __init__(self, agent: "Agent", pod: dict):
        self.agent = agent
        self.ns = pod["metadata"]["namespace"]
        self.name = pod["metadata"]["name"]
        self.uid = pod["metadata"]["uid"]
        self.tag = (self.container(pod) or {}).get("image", "").rsplit(":", 1)[-1]
        self.dir = os.path.join(agent.folder, "agent", self.uid)
        os.makedirs(os.path.join(self.dir, "certs"), mode=0o700, exist_ok=True)
        self.proc = None
        self.restarts = 0
        self.next_start = 0.0
        self.started_at = None
        self.last_exit = None
        self.waiting = ("ContainerCreating", "")
        self.health_port = None
        self.last_status = None
        self.binary = None
        self.argv = None
        self.webhook_port = None
        self.ports = {}
        self.visibility = False
        self.visibility_addr = None
        # The Pod's readinessProbe, as the kubelet keeps it: Ready turns False after failureThreshold probes in a
        # row fail (or at once when the process exits), not after one slow answer on a loaded machine.
        probe = (self.container(pod) or {}).get("readinessProbe") or {}
        self.probe_timeout = float(probe.get("timeoutSeconds") or 1)
        self.failure_threshold = int(probe.get("failureThreshold") or 3)
        self.probe_failures = 0
        self.probed_ready = False

    # The container the chart defines: /manager with --config=...
    @staticmethod
    def container(pod: dict) -> dict | None:
        for c in pod["spec"].get("containers", []):
            if c.get("command") == ["/manager"] and "/kueue" in c.get("image", ""):
                return c
        return None

    def prepare(self, pod: dict) -> bool:
        """Build argv and config. False (with self.waiting set) if not possible yet."""
        c = self.container(pod)
        tag = c["image"].rsplit(":", 1)[-1]
        binary = self.agent.kueue_bins.get(tag)
        if not binary:
            self.waiting = ("ErrImagePull", "no local Kueue manager for image %s (have %s)" % (
                c["image"], ", ".join(sorted(self.agent.kueue_bins))))
            return False
        volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
        config_text = None
        cert_secret = None
        for m in c.get("volumeMounts", []):
            vol = volumes.get(m["name"], {})
            if m["mountPath"] == "/controller_manager_config.yaml" and "configMap" in vol:
                cm = self.agent.api.get("/api/v1/namespaces/%s/configmaps/%s" % (self.ns, vol["configMap"]["name"]))
                if not cm:
                    self.waiting = ("ContainerCreating", "configmap %s not found" % vol["configMap"]["name"])
                    return False
                config_text = cm.get("data", {}).get(m.get("subPath") or "controller_manager_config.yaml")
            if m["mountPath"] == "/tmp/k8s-webhook-server/serving-certs" and "secret" in vol:
                cert_secret = vol["secret"]["secretName"]
        if config_text is None:
            self.waiting = ("CreateContainerConfigError", "no manager config mounted")
            return False
        self.cert_secret = cert_secret
        config = yaml.safe_load(config_text) or {}
        container_webhook_port = int((config.get("webhook") or {}).get("port") or 9443)
        services = self.pod_services(pod)
        # Each server the manager runs binds a loopback port of its own; the agent's
        # service proxy (kube-proxy's part) forwards the Service's ClusterIP:port to a
        # ready manager, so two managers overlap during a rolling update as two pods do.
        self.health_port = free_port()
        self.ports = {}  # (ClusterIP, port) -> local port
        webhook_addr = services.get(container_webhook_port) or services.get("webhook-server")
        if not webhook_addr:
            self.waiting = ("ContainerCreating", "webhook service not found")
            return False
        self.webhook_port = free_port()
        self.ports[webhook_addr] = self.webhook_port
        config.setdefault("health", {})["healthProbeBindAddress"] = "127.0.0.1:%d" % self.health_port
        config.setdefault("metrics", {})["bindAddress"] = "127.0.0.1:%d" % free_port()
        config["webhook"] = dict(config.get("webhook") or {}, host="127.0.0.1", port=self.webhook_port,
                                 certDir=os.path.join(self.dir, "certs"))
        config.pop("pprofBindAddress", None)
        config["namespace"] = self.ns
        # In a pod, client-go reads the namespace from the service account mount.
        if isinstance(config.get("leaderElection"), dict):
            config["leaderElection"].setdefault("resourceNamespace", self.ns)
        # The visibility API server is real where Kueue lets it bind a chosen address
        # (visibilityServer.bindAddress, from 0.18): the API server's aggregator reaches it
        # through the kueue-visibility-server Service. Older managers run with
        # VisibilityOnDemand=false and the agent deletes the APIServices.
        visibility_addr = services.get(8082) or services.get("visibility")
        self.visibility = bool(visibility_addr) and self.version_at_least(tag, (0, 18))
        args = [a for a in c.get("args", []) if not a.startswith("--config=")]
        if self.visibility:
            port = free_port()
            self.ports[visibility_addr] = port
            self.visibility_addr = visibility_addr
            config["visibilityServer"] = {"bindAddress": "127.0.0.1", "bindPort": port}
            os.makedirs("/visibility", mode=0o700, exist_ok=True)  # Kueue's fixed cert dir for it
        else:
            gates_on_cli = any(a.startswith("--feature-gates=") for a in args)
            args = [a + ",VisibilityOnDemand=false" if a.startswith("--feature-gates=") else a for a in args]
            if isinstance(config.get("featureGates"), dict):
                config["featureGates"]["VisibilityOnDemand"] = False
            elif not gates_on_cli:
                args.append("--feature-gates=VisibilityOnDemand=false")
        path = os.path.join(self.dir, "config.yaml")
        with open(path, "w") as handle:
            yaml.safe_dump(config, handle)
        self.kubeconfig = self.agent.service_account_kubeconfig(self.ns, pod["spec"].get("serviceAccountName", "default"), self.dir)
        self.binary = binary
        # --kubeconfig as a flag: the visibility server reads it for delegated authn/authz.
        self.argv = [binary, "--config=" + path, "--kubeconfig=" + self.kubeconfig] + args
        self.env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
        self.image = c["image"]
        self.container_name = c["name"]
        return True

    @staticmethod
    def version_at_least(tag: str, minimum: tuple) -> bool:
        try:
            return tuple(int(x) for x in tag.lstrip("v").split("-")[0].split(".")[:2]) >= minimum
        except ValueError:
            return False

    def pod_services(self, pod: dict) -> dict:
        """targetPort (number or name) -> (ClusterIP, port) for the Services selecting the pod."""
        svcs = self.agent.api.get("/api/v1/namespaces/%s/services" % self.ns) or {"items": []}
        labels = pod["metadata"].get("labels", {})
        out = {}
        for svc in svcs["items"]:
            sel = svc["spec"].get("selector") or {}
            ip = svc["spec"].get("clusterIP")
            if not sel or not ip or ip == "None" or any(labels.get(k) != v for k, v in sel.items()):
                continue
            for port in svc["spec"].get("ports", []):
                out[port.get("targetPort", port["port"])] = (ip, port["port"])
        return out

    def sync_certs(self) -> None:
        if not self.cert_secret:
            return
        sec = self.agent.api.get("/api/v1/namespaces/%s/secrets/%s" % (self.ns, self.cert_secret))
        if not sec:
            return
        import base64
        for key, value in (sec.get("data") or {}).items():
            data = base64.b64decode(value)
            write_if_changed(os.path.join(self.dir, "certs", key), data)

    def held(self) -> bool:
        """The hold file exists and is empty (every manager) or names this Pod's image tag."""
        try:
            with open(os.path.join(self.agent.folder, "agent", "hold")) as handle:
                tags = handle.read().split()
        except OSError:
            return False
        return not tags or self.tag in tags

    def ensure_running(self, pod: dict) -> None:
        if self.proc and self.proc.poll() is not None:
            self.last_exit = (self.proc.returncode, now())
            log("manager for %s/%s exited with %s" % (self.ns, self.name, self.proc.returncode))
            self.proc = None
            self.agent.forget(self.uid)
            self.restarts += 1
            self.next_start = time.time() + BACKOFF[min(self.restarts - 1, len(BACKOFF) - 1)]
            self.waiting = ("CrashLoopBackOff", "back-off restarting the manager")
        if self.proc:
            self.sync_certs()
            return
        if self.held():
            self.waiting = ("HeldByHarness", "the test harness holds the manager stopped")
            return
        if time.time() < self.next_start:
            return
        if not self.prepare(pod):
            return
        self.sync_certs()
        logf = open(os.path.join(self.agent.folder, "logs", "kueue-%s-%s.log" % (self.ns, self.name)), "ab")
        env = dict(os.environ, KUBECONFIG=self.kubeconfig, **self.env)
        self.proc = subprocess.Popen(self.argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True, cwd=self.dir)
        logf.close()
        self.started_at = now()
        self.agent.remember(self.uid, self.proc.pid, os.path.basename(self.binary))
        log("started %s for %s/%s: %s" % (self.binary, self.ns, self.name, shlex.join(self.argv[1:])))

    def ready(self) -> bool:
        if not self.proc or self.proc.poll() is not None:
            self.probed_ready, self.probe_failures = False, 0
            return False
        if any(addr not in self.agent.proxies and addr not in self.agent.blocked for addr in self.ports):
            return False  # a Service address of this Pod does not listen (yet): not an endpoint
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.health_port,
                                        timeout=self.probe_timeout) as resp:
                answered = resp.status == 200
        except OSError:
            answered = False
        if answered:
            self.probed_ready, self.probe_failures = True, 0
            return True
        self.probe_failures += 1
        if self.probed_ready and self.probe_failures < self.failure_threshold:
            return True
        self.probed_ready = False
        return False

    def stop(self, grace: float = 10.0) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        self.agent.forget(self.uid)

    def report(self, pod: dict) -> None:
        ready = self.ready()
        c = self.container(pod)
        if self.proc:
            state = {"running": {"startedAt": self.started_at}}
        else:
            state = {"waiting": {"reason": self.waiting[0], "message": self.waiting[1]}}
        cstatus = {
            "name": c["name"], "image": c["image"], "imageID": "", "ready": ready,
            "restartCount": self.restarts, "started": bool(self.proc), "state": state,
        }
        if self.last_exit:
            cstatus["lastState"] = {"terminated": {"exitCode": self.last_exit[0], "finishedAt": self.last_exit[1],
                                                   "reason": "Error" if self.last_exit[0] else "Completed"}}
        flag = "True" if ready else "False"
        conditions = [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": "True"},
            {"type": "ContainersReady", "status": flag},
            {"type": "Ready", "status": flag},
        ]
        desired = {"phase": "Running" if self.proc else "Pending", "conditions": conditions,
                   "containerStatuses": [cstatus]}
        if self.proc:
            # EndpointSlices need a pod IP (the aggregator reports MissingEndpoints without one),
            # and their validation refuses loopback addresses. The address is data only: the API
            # server reaches Services through their ClusterIPs (loopback, see cluster.py), never
            # through endpoints, so it comes from TEST-NET-1 (RFC 5737), which is never routed.
            ip = "192.0.2.%d" % (1 + int(self.uid.replace("-", "")[:8], 16) % 254)
            desired["podIP"] = ip
            desired["podIPs"] = [{"ip": ip}]
        if desired == self.last_status:
            return
        body = json.loads(json.dumps(desired))
        for cond in body["conditions"]:
            cond["lastTransitionTime"] = now()
        body["startTime"] = pod["status"].get("startTime") or now()
        if self.agent.api.merge("/api/v1/namespaces/%s/pods/%s/status" % (self.ns, self.name), {"status": body}) is not None:
            self.last_status = desired


class ExtensionPod(Manager):
    """The AKS Kueue extension's Pod (tests/emulators/arm): its container's `python -m MODULE`
    runs as a local process with the Pod's service account, and Ready follows its /readyz."""

    kueue = False

    @staticmethod
    def container(pod: dict) -> dict | None:
        for c in pod["spec"].get("containers", []):
            if c.get("image", "").startswith(EXTENSION_IMAGE) and (c.get("command") or [""])[0] == "python":
                return c
        return None

    def prepare(self, pod: dict) -> bool:
        c = self.container(pod)
        self.health_port = free_port()
        self.cert_secret = None
        self.kubeconfig = self.agent.service_account_kubeconfig(self.ns, pod["spec"].get("serviceAccountName", "default"), self.dir)
        self.binary = sys.executable
        self.argv = [sys.executable] + c["command"][1:] + c.get("args", [])
        self.env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
        self.env["HEALTH_PROBE_BIND_ADDRESS"] = "127.0.0.1:%d" % self.health_port
        return True

    def held(self) -> bool:
        return False  # `make hold-manager` holds the Kueue manager only


def runner_for(pod: dict):
    """The class that runs `pod` on this node, or None for Pods the agent leaves alone."""
    return next((cls for cls in (Manager, ExtensionPod) if cls.container(pod)), None)


def pump(src, dst):
    """Copy src to dst until either side closes, then shut both down (a TCP proxy's one direction; the Service
    proxies here and the tests' loopback HTTP proxy use it)."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def serve_connections(sock, handle, running=lambda: True) -> None:
    """Accept on the listening ``sock`` while ``running()`` and until it is closed, each connection handed to
    ``handle(conn)`` on a thread of its own."""
    while running():
        try:
            conn, _peer = sock.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


class ServiceProxy:
    """kube-proxy's job for one Service address: accept on ClusterIP:port (inside
    127.0.0.0/8) and forward each TCP connection to a backend that `pick()` names."""

    def __init__(self, addr, pick):
        self.addr = addr
        self.pick = pick
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(addr)
        self.sock.listen(64)
        self.closed = False
        self.conns = set()  # the sockets of the connections being forwarded
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        serve_connections(self.sock, self._serve, lambda: not self.closed)

    def _serve(self, conn):
        port = self.pick()
        if not port:
            conn.close()  # no endpoint: the caller sees the connection fail, as with no ready pod
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            conn.close()
            return
        upstream.settimeout(None)
        with self.lock:
            self.conns.update((conn, upstream))
        threading.Thread(target=pump, args=(conn, upstream), daemon=True).start()
        pump(upstream, conn)
        with self.lock:
            self.conns.difference_update((conn, upstream))

    def close(self):
        """Stop listening now. shutdown() first: a bare close() while the accept thread blocks in
        accept() leaves the kernel socket listening (that syscall holds it) until one more connection
        arrives, so a new proxy for the same address (a Service recreated with the same ClusterIP)
        could not bind, and that connection went to the old one."""
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def drop_connections(self):
        """End the connections being forwarded too (a drill blocking the address: the aggregator keeps
        its connections to an extension API server open, and would go on using them)."""
        with self.lock:
            conns = list(self.conns)
        for sock in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Agent:
    def __init__(self, folder: str):
        self.folder = folder
        with open(os.path.join(folder, "state.json")) as handle:
            state = json.load(handle)
        pk = os.path.join(folder, "pki")
        self.server = "https://127.0.0.1:%d" % state["ports"]["apiserver"]
        self.api = Api(self.server, os.path.join(pk, "ca.crt"), os.path.join(pk, "agent.crt"), os.path.join(pk, "agent.key"))
        self.ca = pki.CA(pk)
        self.kueue_bins = {}
        for item in state["tools"]["KUEUEOPS_KUEUE_BINS"].split():
            version, _, path = item.partition("=")
            self.kueue_bins[version] = path
        self.managers: dict[str, Manager] = {}
        self.pids_path = os.path.join(folder, "agent", "managers.json")
        self.pids = {}
        self.proxies = {}
        self.blocked = set()  # Service addresses a drill keeps unproxied (agent/block-visibility)
        self.stopping = False
        self.wake = threading.Event()
        self.node_since = now()  # the Node's Ready since the agent started: its lastTransitionTime

    def remember(self, uid, pid, marker):
        self.pids[uid] = {"pid": pid, "marker": marker}
        self._write_pids()

    def forget(self, uid):
        if self.pids.pop(uid, None):
            self._write_pids()

    def _write_pids(self):
        tmp = self.pids_path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.pids, handle)
        os.replace(tmp, self.pids_path)

    def service_account_kubeconfig(self, ns: str, sa: str, folder: str) -> str:
        """A client certificate for system:serviceaccount:NS:SA, so the chart's RBAC is what authorizes the manager."""
        crt, key = self.ca.issue(os.path.join(folder, "sa-client"), "system:serviceaccount:%s:%s" % (ns, sa),
                                 organizations=["system:serviceaccounts", "system:serviceaccounts:" + ns], client=True)
        cfg = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "local", "cluster": {"server": self.server, "certificate-authority": self.ca.cert_path}}],
            "users": [{"name": sa, "user": {"client-certificate": crt, "client-key": key}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": sa, "namespace": ns}}],
            "current-context": "local",
        }
        path = os.path.join(folder, "kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(cfg, handle)
        return path

    def ensure_node(self):
        if self.api.get("/api/v1/nodes/" + NODE) is None:
            self.api.call("POST", "/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux",
                                                      "kubernetes.io/arch": "amd64", "kueueops.io/harness": "true"}},
            })
        self.api.merge("/api/v1/nodes/%s/status" % NODE, {"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kueueops harness node agent", "lastHeartbeatTime": now(),
                            "lastTransitionTime": self.node_since}],
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            "nodeInfo": {"kubeletVersion": "kueueops-agent", "architecture": "amd64", "operatingSystem": "linux",
                         "containerRuntimeVersion": "local://process", "kernelVersion": "", "osImage": "",
                         "kubeProxyVersion": "", "machineID": "", "systemUUID": "", "bootID": ""},
        }})

    def bind_new_pods(self):
        pods = self.api.get("/api/v1/pods?fieldSelector=" + urllib.parse.quote("spec.nodeName=,status.phase=Pending"))
        for pod in (pods or {}).get("items", []):
            if pod["metadata"].get("deletionTimestamp") or not runner_for(pod):
                continue
            self.api.call("POST", "/api/v1/namespaces/%s/pods/%s/binding" % (pod["metadata"]["namespace"], pod["metadata"]["name"]), {
                "apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": pod["metadata"]["name"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
            })
            log("bound %s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]))

    def without_visibility(self) -> bool:
        """A Kueue manager runs without the visibility API (fixups() deletes its APIServices)."""
        return any(m.kueue and m.proc and not m.visibility for m in self.managers.values())

    def fixups(self):
        """Managers that cannot serve the visibility API run without it; then its APIServices
        would break discovery for every client, so they go."""
        if not self.without_visibility():
            return
        services = self.api.get("/apis/apiregistration.k8s.io/v1/apiservices") or {"items": []}
        for item in services["items"]:
            if item["spec"].get("service") and item["spec"].get("group", "").endswith(VISIBILITY_GROUP_SUFFIX):
                self.api.call("DELETE", "/apis/apiregistration.k8s.io/v1/apiservices/" + item["metadata"]["name"])
                log("deleted APIService %s (this Kueue runs with VisibilityOnDemand=false)" % item["metadata"]["name"])

    def pass_once(self):
        self.bind_new_pods()
        pods = self.api.get("/api/v1/pods?fieldSelector=" + urllib.parse.quote("spec.nodeName=" + NODE)) or {"items": []}
        seen = set()
        running = []
        for pod in pods["items"]:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            mgr = self.managers.get(uid)
            if pod["metadata"].get("deletionTimestamp"):
                if mgr:
                    mgr.stop(grace=float(pod["spec"].get("terminationGracePeriodSeconds") or 10))
                    del self.managers[uid]
                self.api.call("DELETE", "/api/v1/namespaces/%s/pods/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]),
                              {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                               "preconditions": {"uid": uid}})
                log("deleted pod %s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]))
                continue
            runner = runner_for(pod)
            if not runner:
                continue
            if not mgr:
                mgr = self.managers[uid] = runner(self, pod)
            mgr.ensure_running(pod)
            running.append((mgr, pod))
        for uid in list(self.managers):
            if uid not in seen:
                self.managers.pop(uid).stop()
        # The Services' addresses listen before any Pod is reported Ready: a client that waits
        # for the Deployment to be ready then finds its webhook answering, as with kube-proxy's rules.
        self.sync_proxies()
        for mgr, pod in running:
            mgr.report(pod)
        self.fixups()

    def backend_for(self, addr):
        """The local port of a ready manager behind `addr` (the newest), else of any running one."""
        candidates = [m for m in self.managers.values() if m.proc and addr in m.ports]
        ready = [m for m in candidates if m.last_status and m.last_status["conditions"][-1]["status"] == "True"]
        chosen = ready or candidates
        return chosen[-1].ports[addr] if chosen else None

    def sync_proxies(self):
        wanted = {addr for m in self.managers.values() for addr in m.ports}
        if os.path.exists(os.path.join(self.folder, "agent", "block-visibility")):
            self.blocked = {m.visibility_addr for m in self.managers.values() if m.visibility_addr}
        else:
            self.blocked = set()
        wanted -= self.blocked
        for addr in wanted - set(self.proxies):
            try:
                self.proxies[addr] = ServiceProxy(addr, lambda a=addr: self.backend_for(a))
                log("proxying service %s:%d" % addr)
            except OSError as exc:
                log("cannot listen on %s:%d: %s" % (addr + (exc,)))
        for addr in set(self.proxies) - wanted:
            proxy = self.proxies.pop(addr)
            proxy.close()
            if addr in self.blocked:
                proxy.drop_connections()

    def settled(self) -> bool:
        """Every Pod of this node either runs a ready process or is held stopped: nothing to do until an event."""
        for mgr in self.managers.values():
            if mgr.proc is None:
                if not mgr.held():
                    return False
            elif not (mgr.last_status and mgr.last_status["conditions"][-1]["status"] == "True"):
                return False
        return True

    def steady(self) -> float:
        """The pace once all is still: FIXUP_STEADY while fixups() has APIServices to keep deleted, else STEADY."""
        return FIXUP_STEADY if self.without_visibility() else STEADY

    def flags(self) -> tuple:
        return tuple(os.path.exists(os.path.join(self.folder, "agent", name)) for name in ("hold", "block-visibility"))

    def exited(self) -> bool:
        return any(m.proc is not None and m.proc.poll() is not None for m in self.managers.values())

    def watch_pods(self) -> None:
        """Wake the loop on every Pod event (a watch, as a kubelet keeps), so a new Pod is bound at once while an
        idle cluster is passed over only every STEADY seconds."""
        while not self.stopping:
            conn = self.api.connect(timeout=WATCH_SECONDS + 30)
            try:
                conn.request("GET", "/api/v1/pods?watch=true&timeoutSeconds=%d" % WATCH_SECONDS)
                resp = conn.getresponse()
                if resp.status != 200:
                    raise OSError("watch answered HTTP %d" % resp.status)
                while not self.stopping and resp.readline():
                    self.wake.set()
            except (http.client.HTTPException, OSError) as exc:
                if not self.stopping:
                    log("pod watch ended: %r" % (exc,))
                    time.sleep(1)
            finally:
                conn.close()

    def run(self):
        signal.signal(signal.SIGTERM, self._term)
        signal.signal(signal.SIGINT, self._term)
        log("node agent for %s" % self.server)
        threading.Thread(target=self.watch_pods, daemon=True).start()
        last_node = 0.0
        busy_until = 0.0
        flags = self.flags()
        while not self.stopping:
            writes = self.api.writes
            try:
                if time.time() - last_node > NODE_HEARTBEAT:
                    self.ensure_node()
                    last_node = time.time()
                    writes = self.api.writes  # the Node's heartbeat moves nothing
                self.pass_once()
            except Exception as exc:  # noqa: BLE001 - the agent must keep going; the log says what failed
                log("pass failed: %r" % (exc,))
            # A pass every FAST seconds while anything moves (a write, a Pod event, a drill flag, a process that
            # exited, a manager not ready), every STEADY (FIXUP_STEADY) seconds once all is still.
            if self.api.writes != writes or not self.settled():
                busy_until = time.monotonic() + BUSY_SECONDS
            end = time.monotonic() + (FAST if time.monotonic() < busy_until else self.steady())
            while not self.stopping and time.monotonic() < end:
                woken = self.wake.wait(min(TICK, max(0.0, end - time.monotonic())))
                now_flags = self.flags()
                if woken or now_flags != flags or self.exited():
                    self.wake.clear()
                    flags = now_flags
                    busy_until = time.monotonic() + BUSY_SECONDS
                    break
        for mgr in self.managers.values():
            mgr.stop(grace=5)
        log("stopped")

    def _term(self, *_):
        self.stopping = True


if __name__ == "__main__":
    Agent(sys.argv[1]).run()
