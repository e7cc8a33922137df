#!/usr/bin/env python3
"""Where kueue_queues spends its time: one run of its engine, in this process,
with each phase timed and every API request it makes counted.

It runs exactly the code of ``plugins/module_utils/queues/apply.py`` (``run``), with the
module's defaults (``create_namespaces: true`` as in the bench playbook), but
without ansible-playbook around it, and wraps the engine's methods with timers:

* load + normalise the input, discovery, the LISTs of the live state,
  cross-reference validation;
* the server-side apply dry-runs of the objects an apply may change (``dry_run_all``);
* the applies (``apply_kind``, per kind);
* the wait for ``Active=True`` (``wait_active``).

Requests are counted at the ApiClient (``call_api``), per phase, method and
dry-run, so the split can be checked against the API server's metric.

    python bench/profile_module.py --config FILE --kubeconfig FILE [--json OUT]

Imports the collection from ANSIBLE_COLLECTIONS_PATH (default
.venv/collections of the checkout).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _import_engine():
    for path in (os.environ.get("ANSIBLE_COLLECTIONS_PATH") or os.path.join(REPO, ".venv", "collections")).split(":"):
        if path and path not in sys.path:
            sys.path.insert(0, path)
    t0 = time.perf_counter()
    from ansible_collections.kueueops.aks.plugins.module_utils.queues import apply as engine_mod  # noqa: E402
    from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q  # noqa: E402
    return engine_mod, q, time.perf_counter() - t0


class Profiler:
    def __init__(self):
        self.lock = threading.Lock()
        self.phase = "setup"
        self.phases = {}  # name -> seconds (wall, outermost)
        self.requests = {}  # (phase, method, dry_run) -> count
        self.request_seconds = {}  # phase -> summed request latency (across threads)
        self._depth = 0

    @contextlib.contextmanager
    def timed(self, name):
        outer = self._depth == 0
        previous = self.phase
        if outer:
            self.phase = name
        self._depth += 1
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if outer:
                with self.lock:
                    self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0
                self.phase = previous

    def count(self, method, dry_run, seconds):
        with self.lock:
            key = (self.phase, method, dry_run)
            self.requests[key] = self.requests.get(key, 0) + 1
            self.request_seconds[self.phase] = self.request_seconds.get(self.phase, 0.0) + seconds


def instrument(engine_mod, q, prof):
    """Wrap the engine's phases and the ApiClient's requests with ``prof``."""
    Engine = engine_mod.QueueEngine
    phase_methods = {
        "discover": "discovery", "detect_aks_extension": "discovery", "list_live": "list live state",
        "list_namespaces": "list live state", "dry_run_all": "dry-run of what may change (validation)",
        "create_namespace": "create namespaces", "apply_kind": "apply (writes)", "wait_active": "wait for Active",
        "wait_gone": "prune/delete wait",
    }
    for name, phase in phase_methods.items():
        original = getattr(Engine, name)

        def wrapper(self, *args, _orig=original, _phase=phase, **kwargs):
            with prof.timed(_phase):
                return _orig(self, *args, **kwargs)
        setattr(Engine, name, wrapper)
    for name, phase in (("load_inputs", "load + normalise input"), ("normalise_all", "load + normalise input"),
                        ("validate", "cross-reference validation"), ("dependency_order", "load + normalise input")):
        original = getattr(q, name)

        def qwrapper(*args, _orig=original, _phase=phase, **kwargs):
            with prof.timed(_phase):
                return _orig(*args, **kwargs)
        setattr(q, name, qwrapper)

    from kubernetes.client import api_client as kac
    original_call = kac.ApiClient.call_api

    def call_api(self, *args, **kwargs):
        # kubernetes >= 35: call_api(method, url, ...), the query string in the url;
        # older clients: call_api(resource_path, method, path_params, query_params, ...).
        method, target = (args + (None, None))[:2]
        if isinstance(target, str) and target.upper() in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"):
            method, target = target, method
            query = kwargs.get("query_params") or (args[3] if len(args) > 3 else None) or []
            dry = any(isinstance(i, (tuple, list)) and i and i[0] == "dryRun" for i in query)
        else:
            dry = "dryRun=" in str(target or kwargs.get("url", ""))
            method = method or kwargs.get("method")
        t0 = time.perf_counter()
        try:
            return original_call(self, *args, **kwargs)
        finally:
            prof.count(str(method).upper(), dry, time.perf_counter() - t0)
    kac.ApiClient.call_api = call_api


def profile(config, kubeconfig, workers=8):
    engine_mod, q, import_seconds = _import_engine()
    prof = Profiler()
    instrument(engine_mod, q, prof)
    from kubernetes import config as kconfig
    api_client = kconfig.new_client_from_config(kubeconfig)
    params = {"resources": [], "src": config, "state": "present", "prune": False, "prune_drain": False,
              "force": False, "hold_admission": False, "create_namespaces": True, "wait": True, "timeout": 900,
              "aks_extension": None, "kueue_namespace": "kueue-system", "workers": workers}
    t0 = time.perf_counter()
    result = engine_mod.run(api_client, params)
    total = time.perf_counter() - t0
    accounted = sum(prof.phases.values())
    phases = dict((k, round(v, 3)) for k, v in prof.phases.items())
    phases["other (change detection, bookkeeping)"] = round(max(0.0, total - accounted), 3)
    requests = {}
    for (phase, method, dry), n in sorted(prof.requests.items()):
        requests.setdefault(phase, {})["%s%s" % (method, " (dry-run)" if dry else "")] = n
    return {
        "seconds_total": round(total, 3),
        "import_seconds": round(import_seconds, 3),
        "phases_seconds": phases,
        "requests_by_phase": requests,
        "request_latency_sum_seconds": dict((k, round(v, 3)) for k, v in prof.request_seconds.items()),
        "changed": result.get("changed"),
        "counts": result.get("counts"),
        "not_active": result.get("not_active"),
        "workers": workers,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--json", help="write the profile here as well")
    args = parser.parse_args(argv)
    out = profile(args.config, args.kubeconfig, args.workers)
    text = json.dumps(out, indent=1, sort_keys=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
