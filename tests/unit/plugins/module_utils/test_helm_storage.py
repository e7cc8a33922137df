# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/helm/helm_storage.py: Helm's release records as the API returns its Secrets (the
real ones, written by the real helm, are read in tests/integration: test_kueue_helm, test_extension_path)."""

import base64
import gzip
import json

from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_storage
from tests.unit.fakes import FakeCluster

SECRETS = "/api/v1/namespaces/kueue-system/secrets"


def secrets_cluster(secrets):
    """The fake cluster holding these Secrets of kueue-system."""
    return FakeCluster(collections={SECRETS: secrets})


def encoded(release, compress=True):
    """A release as Helm stores it: base64(gzip(json)) in the Secret's data, itself base64 in the API's JSON."""
    blob = json.dumps(release).encode()
    return base64.b64encode(base64.b64encode(gzip.compress(blob) if compress else blob)).decode()


def helm_secret(name, version, status, chart=None):
    out = {"metadata": {"name": "sh.helm.release.v1.%s.v%s" % (name, version),
                        "labels": {"owner": "helm", "name": name, "version": str(version), "status": status}}}
    if chart is not None:
        out["data"] = {"release": encoded({"name": name, "chart": {"metadata": chart}})}
    return out


def test_helm_releases_takes_the_latest_revision_of_each_release():
    cluster = secrets_cluster([
        helm_secret("kueue", 1, "superseded", {"name": "kueue", "version": "0.13.0", "appVersion": "v0.13.0"}),
        helm_secret("kueue", 2, "deployed", {"name": "kueue", "version": "0.14.1", "appVersion": "v0.14.1"}),
        helm_secret("broken", "x", "deployed"),
        helm_secret("aaa", 3, "failed"),
    ])
    assert helm_storage.helm_releases(cluster, "kueue-system") == [
        {"name": "aaa", "namespace": "kueue-system", "revision": 3, "status": "failed", "chart": None,
         "chart_version": None, "app_version": None},
        {"name": "kueue", "namespace": "kueue-system", "revision": 2, "status": "deployed", "chart": "kueue",
         "chart_version": "0.14.1", "app_version": "v0.14.1"}]
    assert cluster.calls == [("items", SECRETS, {"labelSelector": "owner=helm", "limit": 500})]


def test_latest_release_secret_is_the_newest_revision_of_that_release():
    older = helm_secret("kueue", 9, "superseded", {"name": "kueue"})
    newest = helm_secret("kueue", 10, "deployed", {"name": "kueue"})  # 10 > 9 as numbers, not as text
    cluster = secrets_cluster([older, newest, helm_secret("other", 11, "deployed", {"name": "other"})])
    # == (not is): an API answer is a copy, never the caller's object; the three Secrets all differ
    assert helm_storage.latest_release_secret(cluster, "kueue-system", "kueue") == newest
    assert cluster.calls == [("items", SECRETS, {"labelSelector": "owner=helm,name=kueue"})]
    assert helm_storage.latest_release_secret(secrets_cluster([]), "kueue-system", "kueue") is None


def test_decode_helm_release_reads_gzip_and_plain_json_and_refuses_the_rest():
    release = {"name": "kueue", "version": 3, "chart": {"metadata": {"version": "0.19.2"}}}
    assert helm_storage.decode_helm_release(encoded(release)) == release
    assert helm_storage.decode_helm_release(encoded(release, compress=False)) == release
    for bad in (None, "", "not base64!", base64.b64encode(base64.b64encode(b"\x1f\x8bnot gzip")).decode(),
                base64.b64encode(base64.b64encode(b"{not json")).decode()):
        assert helm_storage.decode_helm_release(bad) is None, bad
