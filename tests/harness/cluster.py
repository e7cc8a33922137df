"""The local control plane: etcd, kube-apiserver, kube-controller-manager, an OCI
registry holding the Kueue chart, and the node agent that runs the Kueue manager.

Everything listens on 127.0.0.1 (or another address of 127.0.0.0/8). All state —
pids, ports, data, logs, PKI — lives in one run folder, so two checkouts never
collide and `down` stops exactly what `up` started.

Service ClusterIPs are allocated from a range inside 127.0.0.0/8 that is unique to
the run folder: whatever the API server dials for a Service (a webhook, an
aggregated API) is a loopback address, never a 10.x address. See
docs/dev/architecture.md for why this beats rewriting Services after each install.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

from . import pki
from .proc import group_members, live

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class HarnessError(RuntimeError):
    pass


def log(msg: str) -> None:
    print("[cluster %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


GOGC = "400"  # see Cluster._spawn
GOMAXPROCS = "1"  # see Cluster._spawn

# kube-controller-manager's controllers left off. The node agent plays the kubelet without heartbeats: no node
# lifecycle taints and evictions. Nothing here uses ResourceQuota, HorizontalPodAutoscaler, PodDisruptionBudget,
# PersistentVolume(Claim)s or ephemeral volumes, StatefulSet, DaemonSet, CronJob, ReplicationController or mirrored
# Endpoints (Kueue runs as a Deployment; its smoke tests and the tests submit Jobs); their controllers watched and
# resynced for nothing: the resource quota controller's discovery of every API group every 30 s most of all. An idle
# cluster with Kueue, measured on one cluster (60 s, twice each): kube-controller-manager 0.53, 0.57 -> 0.32, 0.33
# CPU s a minute (docs/dev/ci-time.md). Every name is one of kube-controller-manager 1.34's and 1.37's.
KCM_CONTROLLERS_OFF = (
    "node-lifecycle-controller", "taint-eviction-controller", "resourcequota-controller",
    "horizontal-pod-autoscaler-controller", "disruption-controller", "persistentvolume-binder-controller",
    "persistentvolume-attach-detach-controller", "persistentvolume-expander-controller",
    "persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller",
    "ephemeral-volume-controller", "statefulset-controller", "daemonset-controller", "cronjob-controller",
    "replicationcontroller-controller", "endpointslice-mirroring-controller",
)


def run_dir() -> str:
    return os.path.abspath(os.environ.get("KUEUEOPS_RUN_DIR") or os.path.join(REPO, ".run"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loopback_service_cidr(folder: str) -> str:
    """A /24 inside 127.0.0.0/8, derived from the run folder (127.100.0.0 - 127.227.255.0)."""
    digest = hashlib.sha256(folder.encode()).digest()
    return "127.%d.%d.0/24" % (100 + digest[0] % 128, digest[1])


def toolchain_env() -> dict:
    """The binaries of hack/toolchain.sh (building what is missing)."""
    out = subprocess.run(
        [os.path.join(REPO, "hack", "toolchain.sh"), "--env"],
        check=True, capture_output=True, text=True,
    ).stdout
    return parse_exports(out)


def parse_exports(text: str) -> dict:
    """The ``export KEY=value`` lines of a shell script's output (hack/toolchain.sh --env, python -m tests.harness
    env), each value unquoted as the shell would (its first word)."""
    env = {}
    for line in text.splitlines():
        if line.startswith("export ") and "=" in line:
            key, _, value = line[len("export "):].partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env


def pid_alive(pid: int, marker: str | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, with ``marker``, whether its command line names it (the pid is still
    the process recorded, not another that reused the number).

    A process Popen has just returned shows an empty command line for a moment (the parent of a vfork resumes when
    execve drops the old memory, before the kernel has written the new arguments): seen once in 300 starts on a
    loaded machine, and down() right after the agent's start then took the agent for gone and left it running (stop
    51's CI). An empty command line is read again for up to 2 s; a kernel thread's stays empty."""
    deadline = time.time() + 2.0
    while True:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        if not live(pid):
            return False
        if not marker:
            return True
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                cmdline = handle.read()
        except OSError:
            return False
        if cmdline or time.time() > deadline:
            return marker.encode() in cmdline
        time.sleep(0.01)


def stop_pid(pid: int, marker: str | None, timeout: float = 15.0) -> None:
    """Stop the process ``pid`` (if it is still the one ``marker`` names) and every process of its group (each was
    started as a session leader): SIGTERM to the group, SIGKILL after ``timeout``. Gone when this returns: a caller
    that starts it again next (start_apiserver after a slow graceful shutdown), or checks that nothing of a cluster is
    left (test_harness), would otherwise find the leader or a process of its group alive for a moment more."""
    if not pid_alive(pid, marker):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        os.kill(pid, signal.SIGTERM)

    def gone():
        return not pid_alive(pid, marker) and not group_members(pid)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if gone():
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.time() + 10
    while not gone() and time.time() < deadline:
        time.sleep(0.05)
    if not gone():
        raise HarnessError("pid %d (%s) or its group %s survived SIGKILL for 10s" % (pid, marker, group_members(pid)))


class Cluster:
    """A handle on the control plane whose state is in `folder`."""

    def __init__(self, folder: str | None = None):
        self.folder = folder or run_dir()
        self.state_path = os.path.join(self.folder, "state.json")
        self.state = self._load()
        self._children = {}  # name -> Popen, for the processes this handle started

    # ----------------------------------------------------------------- state
    def _load(self) -> dict:
        try:
            with open(self.state_path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    def _save(self) -> None:
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.state, handle, indent=2, sort_keys=True)
        os.replace(tmp, self.state_path)

    def path(self, *parts: str) -> str:
        return os.path.join(self.folder, *parts)

    @property
    def kubeconfig(self) -> str:
        return self.path("admin.kubeconfig")

    @property
    def server(self) -> str:
        return "https://127.0.0.1:%d" % self.state["ports"]["apiserver"]

    def running(self) -> bool:
        procs = self.state.get("processes") or {}
        if not procs:
            return False
        return all(pid_alive(p["pid"], p["marker"]) for p in procs.values()) and self.healthy()

    def healthy(self) -> bool:
        try:
            return self.api_get("/readyz") == b"ok"
        except Exception:  # noqa: BLE001 - any failure means not healthy
            return False

    # ------------------------------------------------------------ API access
    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.path("pki", "ca.crt"))
        ctx.load_cert_chain(self.path("pki", "admin.crt"), self.path("pki", "admin.key"))
        return ctx

    def api_get(self, path: str, timeout: float = 5.0) -> bytes:
        with urllib.request.urlopen(self.server + path, context=self.ssl_context(), timeout=timeout) as resp:
            return resp.read()

    def kubernetes_version(self) -> str:
        """The Kubernetes release the API server reports (the gitVersion of its /version, ``v1.34.5``): what the
        tests compare with instead of a literal, so that each runs on whichever Kubernetes its job starts."""
        return json.loads(self.api_get("/version"))["gitVersion"]

    # ------------------------------------------------------------------- up
    def up(self) -> None:
        if self.state.get("processes") and self.running():
            log("already running (%s)" % self.server)
            return
        if self.state.get("processes"):
            log("found a stale or partial cluster in %s; stopping it first" % self.folder)
            self.down()
        tools = toolchain_env()
        for key in ("KUEUEOPS_ETCD", "KUEUEOPS_KUBE_APISERVER", "KUEUEOPS_KUBE_CONTROLLER_MANAGER",
                    "KUEUEOPS_KUBECTL", "KUEUEOPS_HELM", "KUEUEOPS_HELM_V4", "KUEUEOPS_REGISTRY"):
            if not os.access(tools.get(key, ""), os.X_OK):
                raise HarnessError("%s is not built (%r): run `make toolchain`" % (key, tools.get(key)))
        # A port is chosen free a moment before its process binds it; another cluster starting on the machine at the
        # same time (CI starts three) can take it first ("bind: address already in use" in a log): one retry with
        # other ports absorbs that race.
        for attempt in (1, 2):
            started = time.time()
            try:
                self._start_all(tools)
                break
            except Exception:
                taken = self._port_taken()
                self.down()
                if attempt == 1 and taken:
                    log("%s could not bind its port (%s); starting again with other ports" % (taken, self.folder))
                    continue
                log("start failed; logs are in %s" % self.path("logs"))
                raise
        self.state["startup_seconds"] = round(time.time() - started, 1)
        self._save()
        log("up in %.1fs: %s (kubeconfig %s)" % (time.time() - started, self.server, self.kubeconfig))

    def _start_all(self, tools: dict) -> None:
        """Choose the ports and start every process, in order (up()), from empty data folders (down() removes them)."""
        os.makedirs(self.folder, exist_ok=True)
        subprocess.run(["rm", "-rf", self.path("logs")], check=False)  # logs are per run
        for sub in ("logs", "etcd", "registry", "registry-tls", "pki", "agent"):
            os.makedirs(self.path(sub), mode=0o700, exist_ok=True)
        ports = {name: free_port() for name in ("etcd", "etcd_peer", "apiserver", "registry", "registry_tls", "kcm")}
        self.state = {
            "folder": self.folder,
            "ports": ports,
            "service_cidr": loopback_service_cidr(self.folder),
            "tools": tools,
            "processes": {},
            "started": time.time(),
        }
        self._save()
        self._pki()
        self._start_etcd()
        self._start_apiserver()
        self._write_kubeconfigs()
        self._start_kcm()
        self._start_registry()
        self._start_tls_registry()
        self._push_charts()
        self._start_agent()
        self._wait_ready()

    def _port_taken(self) -> str | None:
        """The process whose log says its port was taken by another (the race up() retries), or None."""
        folder = self.path("logs")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            with open(os.path.join(folder, name), "rb") as handle:
                if b"address already in use" in handle.read():
                    return name.rsplit(".", 1)[0]
        return None

    def _pki(self) -> None:
        ca = pki.CA(self.path("pki"))
        first_ip = self.state["service_cidr"].rsplit(".", 1)[0] + ".1"
        ca.issue(self.path("pki", "apiserver"), "kube-apiserver",
                 dns_names=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                            "kubernetes.default.svc.cluster.local"],
                 ip_addresses=["127.0.0.1", first_ip], server=True)
        ca.issue(self.path("pki", "admin"), "kubernetes-admin", organizations=["system:masters"], client=True)
        ca.issue(self.path("pki", "kcm"), "system:kube-controller-manager", client=True)
        ca.issue(self.path("pki", "agent"), "system:node:kueueops-local",
                 organizations=["system:masters"], client=True)
        # The aggregator's identity towards extension API servers (Kueue's visibility server).
        ca.issue(self.path("pki", "front-proxy-client"), "front-proxy-client", client=True)
        pki.service_account_keypair(self.path("pki", "sa"))

    def _spawn(self, name: str, argv: list, env: dict | None = None) -> None:
        logf = open(self.path("logs", name + ".log"), "ab")
        full_env = dict(os.environ)
        # The Go processes of the control plane (and the Kueue managers the agent starts, which inherit it) collect
        # garbage four times less often than Go's default (GOGC=100): kube-apiserver spent 15% of its CPU in the
        # collector during a Kueue install cycle (pprof), and the suite is CPU-bound on 2 cores. Memory is not short
        # (24 GiB). They also run Go code on one thread each (GOMAXPROCS=1): on the 2 cores of CI, shared by a few
        # clusters and the Ansible runs, Go's scheduler looking for work on a second thread and its garbage
        # collector's idle workers cost CPU that the other processes need. Measured side by side on one local cluster,
        # the whole machine's CPU, two rounds each way: a Kueue install 10.8 -> 9.2 CPU s, its uninstall 5.0 -> 4.4,
        # the cluster idle with Kueue 3.0 -> 2.5 CPU s a minute (docs/dev/ci-time.md). helm, a short process, gains
        # nothing from it (measured) and keeps Go's default. A GOGC or GOMAXPROCS set in the environment wins.
        full_env.setdefault("GOGC", GOGC)
        full_env.setdefault("GOMAXPROCS", GOMAXPROCS)
        full_env.update(env or {})
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=full_env, start_new_session=True, cwd=self.folder)
        logf.close()
        self._children[name] = proc
        self.state["processes"][name] = {"pid": proc.pid, "marker": os.path.basename(argv[0]) if name != "agent" else "tests.harness"}
        self._save()

    def _wait(self, what: str, check, timeout: float = 60.0, proc: str | None = None) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc:
                code = self._children[proc].poll()
                if code is not None:
                    raise HarnessError("%s exited with %s; see %s" % (proc, code, self.path("logs", proc + ".log")))
            try:
                if check():
                    return
            except Exception:  # noqa: BLE001 - retried until the deadline
                pass
            time.sleep(0.2)
        raise HarnessError("timed out after %ss waiting for %s" % (timeout, what))

    def _start_etcd(self) -> None:
        p = self.state["ports"]
        client, peer = "http://127.0.0.1:%d" % p["etcd"], "http://127.0.0.1:%d" % p["etcd_peer"]
        self._spawn("etcd", [
            self.state["tools"]["KUEUEOPS_ETCD"],
            "--name=kueueops", "--data-dir=" + self.path("etcd"),
            "--listen-client-urls=" + client, "--advertise-client-urls=" + client,
            "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
            "--initial-cluster=kueueops=" + peer, "--unsafe-no-fsync=true",
            "--log-level=warn", "--quota-backend-bytes=4294967296",
        ])

        def etcd_ok():
            with urllib.request.urlopen(client + "/health", timeout=2) as resp:
                return b'"true"' in resp.read()
        self._wait("etcd", etcd_ok, proc="etcd")

    def _start_apiserver(self) -> None:
        p, k = self.state["ports"], self.path("pki")
        self._spawn("kube-apiserver", [
            self.state["tools"]["KUEUEOPS_KUBE_APISERVER"],
            "--etcd-servers=http://127.0.0.1:%d" % p["etcd"],
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            "--secure-port=%d" % p["apiserver"],
            "--cert-dir=" + k,
            "--tls-cert-file=%s/apiserver.crt" % k, "--tls-private-key-file=%s/apiserver.key" % k,
            "--client-ca-file=%s/ca.crt" % k,
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file=%s/sa.pub" % k,
            "--service-account-signing-key-file=%s/sa.key" % k,
            "--service-cluster-ip-range=" + self.state["service_cidr"],
            "--authorization-mode=RBAC",
            "--requestheader-client-ca-file=%s/ca.crt" % k,
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--proxy-client-cert-file=%s/front-proxy-client.crt" % k,
            "--proxy-client-key-file=%s/front-proxy-client.key" % k,
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            # Reach aggregated APIs and webhooks through Service ClusterIPs (loopback here),
            # never through endpoint (pod) addresses.
            "--enable-aggregator-routing=false",
            "--profiling=false",
            "--enable-priority-and-fairness=false",
            "--v=1",
        ])
        self._wait("kube-apiserver /readyz", self.healthy, timeout=120, proc="kube-apiserver")

    def stop_apiserver(self, sig: int = signal.SIGTERM) -> None:
        """Stop kube-apiserver (fault injection); etcd, the controllers and the agent keep running
        and reconnect after `start_apiserver`. SIGKILL for an abrupt stop."""
        proc = (self.state.get("processes") or {}).get("kube-apiserver")
        if not proc:
            raise HarnessError("no kube-apiserver in %s" % self.folder)
        if sig == signal.SIGTERM:
            stop_pid(proc["pid"], proc["marker"])
        elif pid_alive(proc["pid"], proc["marker"]):
            os.killpg(proc["pid"], sig)
            deadline = time.time() + 15
            while pid_alive(proc["pid"], proc["marker"]) and time.time() < deadline:
                time.sleep(0.05)
        child = self._children.pop("kube-apiserver", None)
        if child is not None:
            # Reap it. A SIGKILLed kube-apiserver always ends, but tearing down a process of a few GB can take more
            # than the 15 s above on a machine running CI's four jobs (a rehearsal of 2026-12-06 timed out here
            # after 5 s more): wait for it as long as a test's own waits.
            child.wait(120)
        log("stopped kube-apiserver (pid %d)" % proc["pid"])

    def start_apiserver(self) -> None:
        """Start kube-apiserver again after `stop_apiserver`: the same port, etcd, certificates and
        flags, so every kubeconfig and client keeps working."""
        proc = (self.state.get("processes") or {}).get("kube-apiserver")
        if proc and pid_alive(proc["pid"], proc["marker"]):
            raise HarnessError("kube-apiserver is still running (pid %d)" % proc["pid"])
        started = time.time()
        self._start_apiserver()
        log("kube-apiserver back in %.1fs" % (time.time() - started))

    def _kubeconfig(self, path: str, user: str, cert: str, key: str) -> None:
        with open(self.path("pki", "ca.crt"), "rb") as handle:
            ca = base64.b64encode(handle.read()).decode()
        with open(cert, "rb") as handle:
            crt = base64.b64encode(handle.read()).decode()
        with open(key, "rb") as handle:
            keyd = base64.b64encode(handle.read()).decode()
        cfg = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "kueueops-local", "cluster": {"server": self.server, "certificate-authority-data": ca}}],
            "users": [{"name": user, "user": {"client-certificate-data": crt, "client-key-data": keyd}}],
            "contexts": [{"name": "kueueops-local", "context": {"cluster": "kueueops-local", "user": user}}],
            "current-context": "kueueops-local",
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(cfg, handle, indent=2)

    def _write_kubeconfigs(self) -> None:
        self._kubeconfig(self.kubeconfig, "kueueops-admin", self.path("pki", "admin.crt"), self.path("pki", "admin.key"))
        self._kubeconfig(self.path("kcm.kubeconfig"), "kube-controller-manager",
                         self.path("pki", "kcm.crt"), self.path("pki", "kcm.key"))
        self._kubeconfig(self.path("agent.kubeconfig"), "node-agent",
                         self.path("pki", "agent.crt"), self.path("pki", "agent.key"))

    def _start_kcm(self) -> None:
        k = self.path("pki")
        self._spawn("kube-controller-manager", [
            self.state["tools"]["KUEUEOPS_KUBE_CONTROLLER_MANAGER"],
            "--kubeconfig=" + self.path("kcm.kubeconfig"),
            "--authentication-kubeconfig=" + self.path("kcm.kubeconfig"),
            "--authorization-kubeconfig=" + self.path("kcm.kubeconfig"),
            "--bind-address=127.0.0.1", "--secure-port=%d" % self.state["ports"]["kcm"],
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            "--service-account-private-key-file=%s/sa.key" % k,
            "--root-ca-file=%s/ca.crt" % k,
            "--cluster-signing-cert-file=%s/ca.crt" % k, "--cluster-signing-key-file=%s/ca.key" % k,
            "--controllers=" + ",".join(["*"] + ["-" + name for name in KCM_CONTROLLERS_OFF]),
            "--concurrent-gc-syncs=5", "--concurrent-namespace-syncs=5",
            "--v=1",
        ])

    def _serve_registry(self, name: str, http: str, auth: str = "") -> None:
        """Start distribution's registry ``name``: its storage in the run folder's ``name``, the ``http`` (and
        ``auth``) sections of its configuration as given, no telemetry."""
        cfg = self.path(name + ".yml")
        with open(cfg, "w") as handle:
            handle.write(
                "version: 0.1\n"
                "log:\n  level: warn\n"
                "storage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\n" % self.path(name)
                + auth + http)
        self._spawn(name, [self.state["tools"]["KUEUEOPS_REGISTRY"], "serve", cfg],
                    env={"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none",
                         "OTEL_LOGS_EXPORTER": "none", "OTEL_SDK_DISABLED": "true"})

    def _start_registry(self) -> None:
        self._serve_registry("registry", "http:\n  addr: 127.0.0.1:%d\n" % self.state["ports"]["registry"])

        def reg_ok():
            with urllib.request.urlopen("http://127.0.0.1:%d/v2/" % self.state["ports"]["registry"], timeout=2) as r:
                return r.status == 200
        self._wait("registry", reg_ok, proc="registry")

    # A second registry like a private mirror (an Azure Container Registry with a private CA): HTTPS with a
    # certificate from its own CA (not the cluster's) and htpasswd (bcrypt) authentication. Its password is
    # random per run and kept in a 0600 file only (env() gives the file's path, never the password).
    TLS_REGISTRY_USER = "kueueops"

    @property
    def tls_registry_pki(self) -> str:
        return self.path("pki", "registry")

    @property
    def tls_registry(self) -> str:
        return "127.0.0.1:%d" % self.state["ports"]["registry_tls"]

    @property
    def tls_chart_ref(self) -> str:
        return "oci://%s/kueue/charts/kueue" % self.tls_registry

    def tls_registry_password(self) -> str:
        with open(os.path.join(self.tls_registry_pki, "password")) as handle:
            return handle.read()

    def _start_tls_registry(self) -> None:
        import bcrypt  # a test requirement (requirements-test.txt): distribution's htpasswd reads bcrypt only

        folder = self.tls_registry_pki
        ca = pki.CA(folder)  # its own CA: trusting the cluster's CA is not enough
        crt, key = ca.issue(os.path.join(folder, "server"), "kueueops-registry", dns_names=["localhost"],
                            ip_addresses=["127.0.0.1"], server=True)
        password = secrets.token_urlsafe(18)
        pki._write(os.path.join(folder, "password"), password.encode())
        # Cost 5: every request checks the hash; this is a throwaway password for a loopback registry.
        digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()
        pki._write(os.path.join(folder, "htpasswd"), ("%s:%s\n" % (self.TLS_REGISTRY_USER, digest)).encode())
        self._serve_registry(
            "registry-tls", "http:\n  addr: %s\n  tls:\n    certificate: %s\n    key: %s\n" % (self.tls_registry, crt, key),
            auth="auth:\n  htpasswd:\n    realm: kueueops-registry\n    path: %s\n" % os.path.join(folder, "htpasswd"))
        ctx = ssl.create_default_context(cafile=ca.cert_path)

        def reg_ok():
            try:
                urllib.request.urlopen("https://%s/v2/" % self.tls_registry, context=ctx, timeout=2)
            except urllib.error.HTTPError as exc:
                return exc.code == 401  # up, and asking for credentials
            return False
        self._wait("registry-tls", reg_ok, proc="registry-tls")

    @property
    def chart_ref(self) -> str:
        return "oci://127.0.0.1:%d/kueue/charts/kueue" % self.state["ports"]["registry"]

    def _push_charts(self) -> None:
        """Every chart to both registries, the pushes to each in parallel (helm waits on I/O)."""
        tools = self.state["tools"]
        helm = tools["KUEUEOPS_HELM"]
        # The harness's own login to the TLS registry, in a registry config of its own (0600) that no test uses.
        tls_env = dict(self.helm_env(), HELM_REGISTRY_CONFIG=os.path.join(self.tls_registry_pki, "push-login.json"))
        ca = ["--ca-file", os.path.join(self.tls_registry_pki, "ca.crt")]
        subprocess.run([helm, "registry", "login", self.tls_registry, "--username", self.TLS_REGISTRY_USER,
                        "--password-stdin"] + ca, input=self.tls_registry_password().encode(), check=True,
                       capture_output=True, env=tls_env)
        pushed, procs = [], []
        for item in tools["KUEUEOPS_KUEUE_CHARTS"].split():
            version, _, tgz = item.partition("=")
            if not os.path.exists(tgz):
                raise HarnessError("chart for Kueue %s missing (%r): run `make toolchain`" % (version, tgz))
            for argv, env in (([helm, "push", tgz, self.chart_ref.rsplit("/", 1)[0], "--plain-http"], self.helm_env()),
                              ([helm, "push", tgz, self.tls_chart_ref.rsplit("/", 1)[0]] + ca, tls_env)):
                procs.append((argv, subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                                     stdin=subprocess.DEVNULL, env=env)))
            pushed.append(version.lstrip("v"))
        for argv, proc in procs:
            _out, err = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise HarnessError("%s failed (%d): %s" % (" ".join(argv), proc.returncode, err.decode()))
        self.state["chart_versions"] = pushed
        self._save()

    def helm_env(self) -> dict:
        env = dict(os.environ)
        env.update({
            "HELM_CACHE_HOME": self.path("helm", "cache"),
            "HELM_CONFIG_HOME": self.path("helm", "config"),
            "HELM_DATA_HOME": self.path("helm", "data"),
            "KUBECONFIG": self.kubeconfig,
        })
        return env

    def _start_agent(self) -> None:
        self._spawn("agent", [sys.executable, "-m", "tests.harness.agent", self.folder],
                    env={"PYTHONPATH": REPO})

    def _wait_ready(self) -> None:
        def ns_ok():
            out = json.loads(self.api_get("/api/v1/namespaces/default/serviceaccounts/default"))
            return out.get("metadata", {}).get("name") == "default"
        self._wait("the default service account (kube-controller-manager)", ns_ok, timeout=90,
                   proc="kube-controller-manager")

        def node_ok():
            out = json.loads(self.api_get("/api/v1/nodes/kueueops-local"))
            return any(c["type"] == "Ready" and c["status"] == "True" for c in out["status"]["conditions"])
        self._wait("the node agent's node", node_ok, timeout=60, proc="agent")

    # ----------------------------------------------------------------- down
    def down(self) -> None:
        from tests.emulators.arm.emulator import ArmEmulator  # it runs beside this cluster and needs it
        if ArmEmulator(self.folder).down():
            log("stopped the ARM emulator of %s" % self.folder)
        # What is running now, from the state file: another handle (a second fixture instance, the CLI) may
        # have restarted a process since this one loaded it (start_apiserver records the new pid there).
        self.state = self._load() or self.state
        procs = self.state.get("processes") or {}
        # The agent first: it stops the Kueue managers it started.
        order = ["agent", "kube-controller-manager", "registry", "kube-apiserver", "etcd"]
        for name in order + [n for n in procs if n not in order]:
            if name in procs:
                stop_pid(procs[name]["pid"], procs[name]["marker"])
        for pid, marker in self._agent_children():
            stop_pid(pid, marker, timeout=5)
        if procs:
            log("stopped %d processes of %s" % (len(procs), self.folder))
        self.state["processes"] = {}
        if os.path.isdir(self.folder):
            self._save()
            # Data is per run: a new `up` starts from an empty etcd and registry.
            for sub in ("etcd", "registry", "registry-tls", "agent"):
                subprocess.run(["rm", "-rf", self.path(sub)], check=False)

    def _agent_children(self):
        path = self.path("agent", "managers.json")
        try:
            with open(path) as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return []
        return [(m["pid"], m["marker"]) for m in data.values()]

    # ------------------------------------------------------------------ env
    def env(self) -> dict:
        tools = self.state["tools"]
        bin_dirs = [os.path.dirname(tools["KUEUEOPS_HELM"]), os.path.dirname(tools["KUEUEOPS_KUBECTL"])]
        return {
            "KUBECONFIG": self.kubeconfig,
            "K8S_AUTH_KUBECONFIG": self.kubeconfig,
            "KUEUE_CHART_REF": self.chart_ref,
            "KUEUE_CHART_VERSIONS": " ".join(self.state.get("chart_versions", [])),
            "KUEUE_REGISTRY_PLAIN_HTTP": "true",
            # The TLS + htpasswd registry (the same charts): its CA, user and the 0600 file with its password.
            "KUEUE_TLS_CHART_REF": self.tls_chart_ref,
            "KUEUE_TLS_REGISTRY": self.tls_registry,
            "KUEUE_TLS_REGISTRY_CA": os.path.join(self.tls_registry_pki, "ca.crt"),
            "KUEUE_TLS_REGISTRY_USER": self.TLS_REGISTRY_USER,
            "KUEUE_TLS_REGISTRY_PASSWORD_FILE": os.path.join(self.tls_registry_pki, "password"),
            "HELM_V3": tools["KUEUEOPS_HELM"],
            "HELM_V4": tools["KUEUEOPS_HELM_V4"],
            "KUEUEOPS_RUN_DIR": self.folder,
            "PATH": ":".join(bin_dirs + [os.environ.get("PATH", "")]),
        }
