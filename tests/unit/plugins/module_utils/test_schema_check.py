"""schema_check.py: a declared object against the schema of the CRD version the cluster serves."""
from __future__ import annotations

from ansible_collections.kueueops.aks.plugins.module_utils.kube import schema_check

SCHEMA = {"type": "object", "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
    "value": {"type": "integer", "format": "int32"},
    "description": {"type": "string"},
    "spec": {"type": "object", "properties": {
        "stopPolicy": {"type": "string"},
        "fairSharing": {"type": "object", "properties": {"weight": {"x-kubernetes-int-or-string": True,
                                                                    "anyOf": [{"type": "integer"}, {"type": "string"}]}}},
        "nodeLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}},
        "flag": {"type": "boolean"},
        "ratio": {"type": "number"},
        "levels": {"type": "array", "items": {"type": "object", "properties": {"nodeLabel": {"type": "string"}}}}}}}}
LABEL = "kueue.x-k8s.io/v1beta2 X"


def test_a_correct_object_has_no_problem():
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "X", "metadata": {"name": "x", "labels": {"a": "b"}},
           "value": 1000, "spec": {"stopPolicy": "Hold", "fairSharing": {"weight": "0.5"}, "nodeLabels": {"pool": "gpu"},
                                   "extra": {"anything": [1]}, "flag": False, "ratio": 0.5,
                                   "levels": [{"nodeLabel": "kubernetes.io/hostname"}], "description": None}}
    obj["spec"].pop("description")
    assert schema_check.problems(obj, SCHEMA, LABEL) == []
    assert schema_check.problems(dict(obj, value=None), SCHEMA, LABEL) == []


def test_each_scalar_kind_and_container_of_the_wrong_type():
    obj = {"value": "high", "description": 5,
           "spec": {"flag": "yes", "ratio": True, "stopPolicy": ["Hold"], "levels": {"nodeLabel": "x"},
                    "fairSharing": {"weight": [1]}, "nodeLabels": {"pool": 1}}}
    found = {field: (problem, fix) for field, problem, fix in schema_check.problems(obj, SCHEMA, LABEL)}
    assert found == {
        "value": ('must be a number, not the string "high"', "write a number without quotes"),
        "description": ("must be a string, not the number 5",
                        'write it as a string (in quotes when it looks like a number or a boolean): description: "5"'),
        "spec.flag": ('must be true or false, not the string "yes"', "write true or false without quotes"),
        "spec.ratio": ("must be a number, not the boolean true", "write a number without quotes"),
        "spec.stopPolicy": ("must be a string, not a list",
                            "write it as a string (in quotes when it looks like a number or a boolean)"),
        "spec.levels": ("must be a list, not a mapping",
                        "write it as a list ('- ' items), even with one item, e.g. levels: [...]"),
        "spec.fairSharing.weight": ("must be a single value, not a list", "write a single value, not a list or a mapping"),
        "spec.nodeLabels.pool": ("must be a string, not the number 1",
                                 'write it as a string (in quotes when it looks like a number or a boolean): pool: "1"'),
    }


def test_undeclared_fields_are_named_with_the_nearest_declared_one():
    found = schema_check.problems({"spec": {"stopPolicyy": "Hold", "extra": {"b": 1}}, "specs": {}}, SCHEMA, LABEL)
    assert ("spec.stopPolicyy", "is not a field of kueue.x-k8s.io/v1beta2 X",
            "remove it or correct its name (did you mean stopPolicy?)") in found
    assert ("specs", "is not a field of kueue.x-k8s.io/v1beta2 X",
            "remove it or correct its name (did you mean spec?)") in found
    assert len(found) == 2  # spec.extra keeps unknown fields


def test_served_schema_of_a_crd():
    crd = {"spec": {"versions": [{"name": "v1beta1", "served": True, "schema": {"openAPIV3Schema": {"type": "object"}}},
                                 {"name": "v1beta2", "served": False, "schema": {"openAPIV3Schema": SCHEMA}}]}}
    assert schema_check.served_schema(crd, "v1beta1") == {"type": "object"}
    assert schema_check.served_schema(crd, "v1beta2") is None
    assert schema_check.served_schema(None, "v1beta2") is None
