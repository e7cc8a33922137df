"""upgrade_run: the inputs kueue_upgrade_plan refuses before anything is contacted, and the extension path's
choice of versions among those the release train offers (pure parts)."""
from __future__ import annotations

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.upgrade import upgrade_run


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


OFFERED = ["0.18.4-aks.0.4.4", "0.19.2-aks.0.4.4", "0.17.0-aks.0.4.4", "0.15.0-aks.0.4.4"]


class Recording(upgrade_run.Planner):
    """A Planner whose plan records what it was asked instead of reading a cluster."""

    def plan(self, current, target, published, api_client):
        return {"current": current, "target": target,
                "published": {m: published(m) for m in ("0.15", "0.16", "0.17", "0.18", "0.19", "0.20")}}


def extension(**extra):
    return Recording(params(install_method="extension", current_version="0.18.4-aks.0.4.4",
                            available_versions=OFFERED, **extra), lambda: None, None)


def test_extension_path_plans_among_the_offered_versions_in_aks_form():
    plan = extension().run_extension()
    assert plan["current"] == "0.18.4-aks.0.4.4" and plan["target"] == "0.19.2-aks.0.4.4"  # latest: the newest
    assert plan["published"] == {"0.15": "0.15.0-aks.0.4.4", "0.16": None, "0.17": "0.17.0-aks.0.4.4",
                                 "0.18": "0.18.4-aks.0.4.4", "0.19": "0.19.2-aks.0.4.4", "0.20": None}
    assert extension(target_version="0.19.2-aks.0.4.4").run_extension()["target"] == "0.19.2-aks.0.4.4"


@pytest.mark.parametrize("target, fix", [
    ("0.19.2", "give 0.19.2-aks.0.4.4, Kueue 0.19.2 as the release train offers it, or latest"),
    ("0.19.2-aks.9.9.9", "give 0.19.2-aks.0.4.4, Kueue 0.19.2 as the release train offers it, or latest"),
    ("0.16.0-aks.0.4.4", "give one of the offered versions, or latest"),
])
def test_extension_target_not_offered_is_refused_naming_the_offered_form(target, fix):
    with pytest.raises(upgrade_run.KueueOpsError) as caught:
        extension(target_version=target).run_extension()
    assert caught.value.field == "target_version" and caught.value.fix == fix
    assert "the release train does not offer %s" % target in caught.value.problem
