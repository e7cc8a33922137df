"""upgrade_run: the inputs kueue_upgrade_plan refuses before anything is contacted, and the extension path's
choice of versions among those the release train offers (pure parts)."""
from __future__ import annotations

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils import upgrade_run


def params(**extra):
    out = {"install_method": "helm", "target_version": "latest", "current_version": None, "available_versions": [],
           "chart_ref": "oci://r/kueue", "feature_gates": {}, "integrations": None}
    out.update(extra)
    return out


class Refused(Exception):
    pass


def refuse(problem, field, fix):
    raise Refused(field)


@pytest.mark.parametrize("extra, field", [
    ({"target_version": "0.19"}, "target_version"),
    ({"current_version": "0.15.0"}, "current_version"),
    ({"chart_ref": "./charts/kueue"}, "chart_ref"),
    ({"install_method": "extension"}, "current_version"),
    ({"install_method": "extension", "current_version": "0.18.4-aks.0.4.4", "available_versions": ["x"]},
     "available_versions"),
])
def test_inputs_refused_before_anything_is_contacted(extra, field):
    with pytest.raises(Refused) as caught:
        upgrade_run.Planner(params(**extra), None, None).check_inputs(refuse)
    assert str(caught.value) == field


def test_good_inputs_pass():
    upgrade_run.Planner(params(), None, None).check_inputs(refuse)
    upgrade_run.Planner(params(install_method="extension", current_version="0.18.4-aks.0.4.4",
                               available_versions=["0.19.2-aks.0.4.4"]), None, None).check_inputs(refuse)
