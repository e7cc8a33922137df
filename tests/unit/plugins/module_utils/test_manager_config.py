# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kueue/manager_config.py: the gates and integrations a running manager uses, read from
its container args and ConfigMap (rendered then read back: test_helm_values.test_roundtrip_render_then_read_back;
against a real manager: tests/integration/test_kueue_helm.py)."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import manager_config as mc


def test_effective_from_deployment():
    args = ["--config=/controller_manager_config.yaml", "--zap-log-level=2",
            "--feature-gates=LocalQueueMetrics=true,TopologyAwareScheduling=false"]
    cm = "apiVersion: config.kueue.x-k8s.io/v1beta2\nintegrations:\n  frameworks:\n  - batch/job\n  - ray.io/rayjob\n"
    gates, frameworks = mc.effective_from_deployment(args, cm)
    assert gates == {"LocalQueueMetrics": True, "TopologyAwareScheduling": False}
    assert frameworks == ["batch/job", "ray.io/rayjob"]


def test_effective_from_deployment_config_gates_and_defaults():
    gates, frameworks = mc.effective_from_deployment(["--feature-gates", "A=T,B=0"], "")
    assert gates == {"A": True, "B": False} and frameworks == ["batch/job"]
    gates, frameworks = mc.effective_from_deployment([], "featureGates:\n  A: true\nintegrations: {}\n")
    assert gates == {"A": True} and frameworks == ["batch/job"]
    with pytest.raises(ValueError):
        mc.parse_feature_gates_flag("A=maybe")
    with pytest.raises(ValueError):
        mc.parse_feature_gates_flag("A")


def test_get_path_tells_a_missing_key_from_a_null_value():
    values = {"a": {"b": None, "c": {"d": 1}}, "e": "text"}
    assert mc.get_path(values, "a.c.d") == 1
    assert mc.get_path(values, "a.b", mc.MISSING) is None
    assert mc.get_path(values, "a.x", mc.MISSING) is mc.MISSING
    assert mc.get_path(values, "e.f") is None  # through a string: missing
