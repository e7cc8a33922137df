"""module_utils/helm/helm_session.py: the read side of kueue_helm's session on plain values (which chart version,
what helm's output must never show). HelmSession's methods are driven with fakes through its subclass in
test_helm_install.py (KueueHelm), against a cluster in tests/integration/test_kueue_helm.py and test_upgrade.py."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_session as hs
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError


def test_helm_secrets():
    assert hs.helm_secrets({}) == []
    assert hs.helm_secrets({"HELM_KUBETOKEN": "tok"}, "user:p@ss/w", "regpw") == [
        "tok", "user:p@ss/w", "p@ss/w", "p%40ss%2Fw", "regpw"]


@pytest.mark.parametrize("given,text", [("0.19.2", "0.19.2"), ("v0.19.2", "0.19.2")])
def test_check_semver(given, text):
    assert hs.check_semver(given) == text


@pytest.mark.parametrize("given", ["0.19", "latest-ish", "v1"])
def test_check_semver_refuses(given):
    with pytest.raises(KueueOpsError) as err:
        hs.check_semver(given)
    assert err.value.message() == ("chart_version: %r is not a chart version. Fix: give an exact version such as "
                                   "0.19.2, or latest." % given)


def test_local_chart_version():
    for wanted in ("latest", "0.19.2", "v0.19.2"):
        assert hs.local_chart_version("/c", wanted, {"version": "0.19.2"}) == "0.19.2"
    with pytest.raises(KueueOpsError) as err:
        hs.local_chart_version("/c", "0.18.0", {"version": "0.19.2"})
    assert err.value.message() == ("chart_version: the chart at /c is version 0.19.2, not 0.18.0. Fix: use latest or "
                                   "0.19.2 with this chart path.")
