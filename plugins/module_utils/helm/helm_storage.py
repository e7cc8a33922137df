# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helm's own records of its releases, read from the cluster without a helm binary: the Secrets of Helm's storage
(labelled ``owner=helm``, ``name=<release>``, ``version=<revision>``, ``status``), each holding the release as
base64(gzip(json)) (Helm 3 and 4, storage format v1).

Its own file, apart from verify.py, so that the modules that only read releases (kueue_info, the upgrade) do not
carry the verifier, the Helm values and the Kueue catalog in their payload: ansible-core parses every file a module
imports once per module per run, and Python compiles it in every module process (docs/dev/ci-time.md).
"""
import base64
import gzip
import json

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import path


def decode_helm_release(data):
    """Helm 3/4 store a release as base64(gzip(json)) inside the Secret's (base64) data."""
    if not data:
        return None
    try:
        raw = base64.b64decode(base64.b64decode(data))
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (ValueError, OSError):
        return None


def latest_release_secret(cluster, namespace, release_name):
    """The Secret of the newest revision of the Helm release ``release_name`` in ``namespace`` (Helm's storage:
    Secrets labelled ``owner=helm,name=<release>``, ``version`` the revision), or None when there is none."""
    secrets = cluster.items(path("v1", "secrets", namespace), labelSelector="owner=helm,name=%s" % release_name)
    if not secrets:
        return None
    return max(secrets, key=lambda s: int(((s.get("metadata") or {}).get("labels") or {}).get("version", "0")))


def helm_releases(cluster, namespace):
    """The Helm releases recorded in ``namespace`` (Helm's storage: Secrets labelled ``owner=helm``),
    the latest revision of each: [{name, namespace, revision, status, chart, chart_version, app_version}],
    sorted by name. Reads no helm binary; works for Helm 3 and 4 (storage format v1). ``cluster``: a
    kueue_cluster.Cluster (it lists page by page)."""
    latest = {}
    for secret in cluster.items(path("v1", "secrets", namespace), labelSelector="owner=helm", limit=500):
        labels = (secret.get("metadata") or {}).get("labels") or {}
        name = labels.get("name")
        try:
            revision = int(labels.get("version", "0"))
        except ValueError:
            continue
        if name and (name not in latest or revision > latest[name][0]):
            latest[name] = (revision, secret)
    out = []
    for name in sorted(latest):
        revision, secret = latest[name]
        release = decode_helm_release((secret.get("data") or {}).get("release")) or {}
        chart = (release.get("chart") or {}).get("metadata") or {}
        out.append({"name": name, "namespace": namespace, "revision": revision,
                    "status": ((secret.get("metadata") or {}).get("labels") or {}).get("status"), "chart": chart.get("name"),
                    "chart_version": chart.get("version"), "app_version": chart.get("appVersion")})
    return out
