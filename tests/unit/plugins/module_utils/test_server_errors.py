"""server_errors.py: the API server's refusals as field path, plain words and fix; every CEL rule and webhook
check of the generated catalog (tests/unit/data/kueue_rules_data.py, test data written by
hack/gen_kueue_catalog.py --rules) covered by a translation."""
from __future__ import annotations

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kube import server_errors as se
from tests.unit.data import kueue_rules_data

CQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "team"},
      "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
          {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": 4}, {"name": "memory", "nominalQuota": "8Gi"}]},
          {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": 4, "borrowingLimit": 2},
                                         {"name": "memory", "nominalQuota": "8Gi"}]}]}]}}
WPC = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "high"},
       "value": "high"}


def _entries():
    """(where first seen, detail) for every distinct CEL rule message and webhook check detail of the catalog."""
    seen = {}
    for minor, record in sorted(kueue_rules_data.RULES.items()):
        for kind, version, path, message in record["cel_rules"]:
            seen.setdefault(message, "%s CEL rule of %s/%s at %s" % (minor, kind, version, path))
        for call, detail in record["webhook_checks"]:
            seen.setdefault(se.catalog_detail(detail), "%s webhook field.%s" % (minor, call))
    return sorted((where, detail) for detail, where in seen.items())


ENTRIES = _entries()


def test_the_catalog_has_the_rules_of_every_minor_it_was_generated_from():
    assert set(kueue_rules_data.RULES) >= {"0.14", "0.15", "0.17", "0.18", "0.19"}
    for record in kueue_rules_data.RULES.values():
        assert record["cel_rules"] and record["webhook_checks"]


@pytest.mark.parametrize("where,detail", ENTRIES, ids=["%s: %s" % e for e in ENTRIES])
def test_every_cel_rule_and_webhook_check_has_a_translation_with_a_fix(where, detail):
    rule = se.rule_for(detail)
    assert rule is not None, "%s: no RULES entry matches %r; add one with the field and the fix" % (where, detail)
    _where, _text, fix = rule
    worded = detail if not detail.startswith("<") else {
        "<NotSupported>": 'Unsupported value: "x": supported values: "a", "b"', "<Duplicate>": 'Duplicate value: "x"',
        "<TooMany>": "Too many: 3: must have at most 2 items", "<TooLong>": "Too long: may not be more than 63 bytes",
    }[detail]
    assert fix or se._schema_fix(worded) != "correct the value", "%s: %r has no fix" % (where, detail)


def test_typed_patch_integer_written_as_a_word():
    message = ("failed to create typed patch object (kueue.x-k8s.io/v1beta2, Kind=WorkloadPriorityClass): "
               ".value: expected numeric (int or float), got string")
    assert se.typed_patch(message, WPC, "kueue.x-k8s.io/v1beta2 WorkloadPriorityClass") == [
        ("value", 'must be a number, not the string "high"', "write a number without quotes")]


def test_typed_patch_number_in_quotes_and_string_as_number_and_several_errors():
    wpc = dict(WPC, value="1000", description=5)
    message = ("failed to create typed patch object (kueue.x-k8s.io/v1beta2, Kind=WorkloadPriorityClass): errors:\n"
               "  .value: expected numeric (int or float), got string\n"
               "  .description: expected string, got &value.valueUnstructured{Value:5}")
    assert se.typed_patch(message, wpc, "x") == [
        ("value", 'must be a number, not the string "1000"', 'write a number without quotes: value: 1000, not "1000"'),
        ("description", "must be a string, not the number 5",
         'write it as a string (in quotes when it looks like a number or a boolean): description: "5"')]


def test_typed_patch_paths_of_associative_lists_become_indexes():
    message = ('failed to create typed patch object (kueue.x-k8s.io/v1beta2, Kind=ClusterQueue): '
               '.spec.resourceGroups[0].flavors[name="spot"].resources[name="cpu"].nominalQuota: '
               'expected string, got &value.valueUnstructured{Value:true}')
    cq = {"spec": {"resourceGroups": [{"flavors": [{"name": "on-demand", "resources": []},
                                                   {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": True}]}]}]}}
    (field, problem, fix), = se.typed_patch(message, cq, "x")
    assert field == "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota"
    assert problem == "must be a string, not the boolean true"
    assert fix.endswith('nominalQuota: "true"')


def test_typed_patch_unknown_field_and_map_for_list():
    message = ("failed to create typed patch object (kueue.x-k8s.io/v1beta2, Kind=ClusterQueue): errors:\n"
               "  .spec.cohrt: field not declared in schema\n"
               "  .spec.resourceGroups: expected list, got &{map[a:b]}")
    found = se.typed_patch(message, {"spec": {"cohrt": "x", "resourceGroups": {"a": "b"}}}, "kueue.x-k8s.io/v1beta2 ClusterQueue")
    assert found[0] == ("spec.cohrt", "is not a field of kueue.x-k8s.io/v1beta2 ClusterQueue",
                        "remove it or correct its name")
    assert found[1][:2] == ("spec.resourceGroups", "must be a list, not a mapping")
    assert se.typed_patch("something else", {}, "x") is None


def test_cel_rule_narrowed_to_the_field_it_is_about():
    assert se.cause("spec", 'Invalid value: "object": borrowingLimit must be nil when cohort is empty', CQ) == (
        "spec.resourceGroups[0].flavors[1].resources[0].borrowingLimit",
        "borrowingLimit needs a cohort to borrow from (spec.cohortName is empty)", se.LIMIT_FIX)
    bad = {"spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "a", "resources": [{"name": "cpu"}, {"name": "memory"}]}, {"name": "b", "resources": [{"name": "cpu"}]}]}]}}
    field, _text, fix = se.cause("spec.resourceGroups[0]", 'Invalid value: "object": flavors must have the same number '
                                 'of resources as the coveredResources', bad)
    assert field == "spec.resourceGroups[0].flavors[1].resources" and "coveredResources" in fix


def test_cel_rule_without_the_object_value_as_kubernetes_1_37_words_it():
    """Kubernetes 1.35+ leaves the value "object" out of a CEL rule's Invalid value (seen on 1.37.2): the same
    translation as 1.34's words."""
    for words in ('Invalid value: "object": borrowingLimit must be nil when cohort is empty',
                  'Invalid value: borrowingLimit must be nil when cohort is empty'):
        assert se.cause("spec", words, CQ) == (
            "spec.resourceGroups[0].flavors[1].resources[0].borrowingLimit",
            "borrowingLimit needs a cohort to borrow from (spec.cohortName is empty)", se.LIMIT_FIX), words


def test_structural_schema_causes():
    assert se.cause(".spec.queueingStrategy", 'Unsupported value: "Sideways": supported values: "StrictFIFO", '
                    '"BestEffortFIFO"', {}) == ("spec.queueingStrategy", 'Unsupported value: "Sideways": supported '
                                                'values: "StrictFIFO", "BestEffortFIFO"', "use one of: StrictFIFO, BestEffortFIFO")
    assert se.cause("spec.clusterQueue", "Required value", {}) == ("spec.clusterQueue", "is required",
                                                                   "set spec.clusterQueue")
    field, text, fix = se.cause("metadata.name", 'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must '
                                "consist of lower case alphanumeric characters, '-' or '.', and must start and end with"
                                " an alphanumeric character (e.g. 'example.com', regex used for validation is "
                                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')", {})
    assert field == "metadata.name" and "must consist of lower case" in text
    assert fix == ("write a value that matches [a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)* "
                   "(such as 'example.com')")
    assert se.cause("spec.weight", "Invalid value: -1: spec.weight in body should be greater than or equal to 0",
                    {})[2] == "give 0 or more"
    assert se.cause("<nil>", "Required value", {})[0] is None
    assert se.cause("spec.levels", "Invalid value: 0: spec.levels in body should have at least 1 items", {}) == (
        "spec.levels", "has 0 items, at least 1 needed", "give at least 1")
    assert se.cause("spec.levels[0].nodeLabel", 'Invalid value: "Not A Label": spec.levels[0].nodeLabel in body should '
                    "match '^[a-z]+$'", {}) == ("spec.levels[0].nodeLabel", """the value "Not A Label" should match """
                                                "'^[a-z]+$'", "write a value that matches ^[a-z]+$")
    assert se.cause("spec", "no such key: nodeLabels evaluating rule: at least one nodeLabel is required when "
                    "topology is set", {"spec": {"topologyName": "t"}}) == (
        "spec.topologyName", "a ResourceFlavor with spec.topologyName needs spec.nodeLabels",
        "add the spec.nodeLabels that select the nodes of the topology, or remove spec.topologyName")


def test_webhook_aggregate_with_one_and_several_errors():
    one = ('admission webhook "vclusterqueue.kb.io" denied the request: '
           'spec.resourceGroups[0].flavors[1].resources[0].lendingLimit: Invalid value: "1": must be nil when cohort '
           'is empty')
    assert se.webhook(one, CQ) == [("spec.resourceGroups[0].flavors[1].resources[0].lendingLimit",
                                    "a borrowing or lending limit needs a cohort (spec.cohortName or spec.parentName "
                                    "is empty)", se.LIMIT_FIX)]
    several = ('admission webhook "vclusterqueue.kb.io" denied the request: [spec.resourceGroups[0].flavors[0].name: '
               'Duplicate value: "a", spec.fairSharing.weight: Invalid value: "-1": must be greater than or equal to 0]')
    assert se.webhook(several, {}) == [
        ("spec.resourceGroups[0].flavors[0].name", "listed twice", "keep one of the entries"),
        ("spec.fairSharing.weight", "must not be negative", "give 0 or more")]
    assert se.webhook("not a webhook", {}) is None


def test_smd_paths_and_values():
    obj = {"spec": {"levels": [{"nodeLabel": "a"}], "set": ["x", "y"]}}
    assert se.smd_path('.spec.levels[nodeLabel="a"]', obj) == "spec.levels[0]"
    assert se.smd_path('.spec.set[="y"]', obj) == "spec.set[1]"
    assert se.smd_path('.spec.levels[nodeLabel="zz"].x', obj) == 'spec.levels[nodeLabel="zz"]'
    assert se.value_at(obj, "spec.levels[0].nodeLabel") == "a"
    assert se.value_at(obj, "spec.levels[3].nodeLabel") is None
    assert se.find(obj, "spec.levels[*].nodeLabel") == ["spec.levels[0].nodeLabel"]


def test_unknown_field_suggests_the_nearest_name():
    assert se.unknown_field("spec.cohrtName", "x", ["cohortName", "stopPolicy"])[2] == (
        "remove it or correct its name (did you mean cohortName?)")
    assert "the fields here: a, b" in se.unknown_field("spec.zzz", "x", ["a", "b"])[2]
