"""Fuzzing the pure parsers and renderers with hypothesis (issue 8, item 6): whatever a user
writes, they fail with the module's own error type (KueueOpsError, or the documented
ValueError / problem list), never with another exception that would reach the user as a
traceback."""

import os
import re
from decimal import Decimal

from hypothesis import HealthCheck, given, settings, strategies as st
from kubernetes.utils import parse_quantity as k8s_parse_quantity

from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension
from ansible_collections.kueueops.aks.plugins.module_utils.helm import helm_runner, helm_values
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog, queues
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_api as api
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError

FUZZ = settings(max_examples=int(os.environ.get("KUEUEOPS_FUZZ_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
json_like = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)), max_leaves=25)
quantity_text = st.from_regex(r'\A[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4}|[kMGTPE]i?|m|Ki)?\Z')
versions = st.one_of(st.text(max_size=12), st.from_regex(r'\Av?[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,3})?(-[a-z0-9.]{1,8})?\Z'),
                     st.sampled_from(['0.19.2', 'v0.18.4', '0.13', 'latest', '0.99.0', '1.0.0']))
KINDS = ['ResourceFlavor', 'Cohort', 'ClusterQueue', 'LocalQueue', 'WorkloadPriorityClass', 'AdmissionCheck',
         'Topology', 'ProvisioningRequestConfig', 'MultiKueueConfig', 'MultiKueueCluster', 'Secret', 'Workload', 'Pod']
spec_fields = st.sampled_from(['cohort', 'cohortName', 'admissionChecks', 'admissionChecksStrategy', 'resourceGroups',
                               'clusterQueue', 'namespaceSelector', 'preemption', 'flavorFungibility', 'kubeConfig',
                               'clusterSource', 'clusters', 'parent', 'nodeLabels', 'fairSharing', 'stopPolicy',
                               'retryDelayMinutes', 'controllerName', 'parameters', 'levels', 'quotaManagement'])
kueue_docs = st.fixed_dictionaries({
    'apiVersion': st.sampled_from(['kueue.x-k8s.io/v1beta1', 'kueue.x-k8s.io/v1beta2', 'kueue.x-k8s.io/v1alpha1',
                                   'v1', 'kueue.x-k8s.io', '']),
    'kind': st.sampled_from(KINDS),
    'metadata': st.one_of(json_like, st.fixed_dictionaries(
        {'name': st.text(max_size=15)}, optional={'namespace': st.text(max_size=10)})),
    'spec': st.one_of(json_like, st.dictionaries(spec_fields, json_like, max_size=5)),
}, optional={'data': json_like, 'stringData': json_like, 'value': json_like, 'status': json_like})


@FUZZ
@given(st.one_of(quantity_text, scalars, json_like))
def test_parse_quantity(value):
    try:
        result = queues.parse_quantity(value)
    except ValueError as exc:
        assert str(exc)
    else:
        assert isinstance(result, Decimal) and result.is_finite()


# The pattern Kueue's CRDs give every quantity field (config/components/crd/bases, v0.19.2), which the API
# server checks before Kueue's Go code (resource.ParseQuantity) reads the value; Go also needs an integer exponent.
CRD_QUANTITY = re.compile(r'^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?'
                          r'(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$')
# What both accept: the CRD pattern with integer exponents (bounded sizes).
kubernetes_quantity = st.from_regex(r'\A[+-]?([0-9]{1,6}(\.[0-9]{0,4})?|\.[0-9]{1,4})([KMGTPE]i|[numkMGTPE]|'
                                    r'[eE][+-]?[0-9]{1,2})?\Z')
near_quantity = st.builds(lambda q, junk, at: q[:at] + junk + q[at:], kubernetes_quantity,
                          st.text(alphabet='0123456789.+-eEinumkKMGTP_ \u0661', max_size=2), st.integers(0, 12))


@FUZZ
@given(kubernetes_quantity)
def test_parse_quantity_accepts_what_kubernetes_accepts(text):
    """Every quantity the API server and Kueue accept (every suffix, n and u included) is accepted, with
    the value kubernetes.utils.parse_quantity gives."""
    assert CRD_QUANTITY.match(text), text
    assert queues.parse_quantity(text) == k8s_parse_quantity(text)


@FUZZ
@given(st.one_of(near_quantity, st.text(max_size=8)))
def test_parse_quantity_agrees_with_kubernetes_utils(text):
    """On anything, where both parsers accept, the values are equal; and what this parser accepts
    the CRD pattern accepts too (kubernetes.utils also takes what Kubernetes refuses: 1K, ' 1', Infinity)."""
    try:
        ours = queues.parse_quantity(text)
    except ValueError:
        return
    assert CRD_QUANTITY.match(text), text
    try:
        theirs = k8s_parse_quantity(text)
    except ValueError:
        return
    assert ours == theirs, text


@FUZZ
@given(st.lists(st.one_of(kueue_docs, json_like), max_size=6), st.sampled_from(['v1beta1', 'v1beta2']))
def test_normalise_convert_and_validate(docs, version):
    """v1beta1 <-> v1beta2 conversion, normalisation and cross-reference validation report problems;
    they never raise."""
    served = dict((kind, version) for kind in api.KIND_ORDER)
    problems = []
    objects = queues.normalise_all([('input[%d]' % i, d) for i, d in enumerate(docs)], served, problems)
    for problem in problems:
        assert str(problem)
    checks = queues.validate(objects, {}, {'team-a'}, create_namespaces=False)
    for problem in checks:
        assert str(problem)
    queues.dependency_order(objects)


@FUZZ
@given(versions, st.one_of(json_like, st.dictionaries(st.text(max_size=30), st.one_of(st.booleans(), scalars))),
       st.one_of(json_like, st.lists(st.text(max_size=30))), json_like)
def test_render_values(version, gates, integrations, user_values):
    default_config = 'apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nintegrations:\n  frameworks:\n  - batch/job\n'
    try:
        helm_values.render_values(version, gates, integrations, user_values, default_config)
    except KueueOpsError as exc:
        assert exc.message()


@FUZZ
@given(versions, json_like, json_like)
def test_catalog_validation(version, gates, integrations):
    kueue_catalog.parse_version(version)
    kueue_catalog.minor_of(version)
    kueue_catalog.catalog_for(version)
    kueue_catalog.version_warning(version)
    for call, arg in ((kueue_catalog.validate_feature_gates, gates), (kueue_catalog.validate_integrations, integrations)):
        try:
            problems = call(version, arg)
        except KueueOpsError as exc:
            assert exc.message()
        else:
            assert all(isinstance(p, str) and p for p in problems)


@FUZZ
@given(st.text(max_size=200), st.one_of(st.none(), versions), st.booleans())
def test_registry_failures(stderr, version, logged_in):
    error = helm_runner.registry_failure(helm_runner.HelmError(stderr), 'oci://r.io/k', version=version,
                                         logged_in=logged_in)
    assert error is None and version or error.field and 'Fix:' in error.message()


@FUZZ
@given(st.text(max_size=40))
def test_oci_refs(ref):
    for candidate in (ref, 'oci://' + ref):
        try:
            host, repo = helm_runner.split_oci_ref(candidate)
        except KueueOpsError as exc:
            assert exc.field == 'chart_ref'
        else:
            assert host and repo


extension_params = st.fixed_dictionaries({
    'state': st.sampled_from(['present', 'absent']), 'name': st.text(max_size=10),
    'extension_type': st.sampled_from(['microsoft.kueue', 'Microsoft.Kueue', 'other']),
    'release_train': st.one_of(st.none(), st.sampled_from(['preview', 'stable', ''])),
    'version': st.one_of(st.none(), versions), 'auto_upgrade_mode': st.one_of(st.none(), st.sampled_from(
        ['none', 'patch', 'compatible'])),
    'release_namespace': st.sampled_from(['kueue-system', 'other']),
    'configuration_settings': st.one_of(st.none(), st.dictionaries(st.text(max_size=8), scalars, max_size=3)),
    'configuration_protected_settings': st.one_of(st.none(), st.dictionaries(st.text(max_size=8), scalars, max_size=3)),
    'update_protected_settings': st.sampled_from(['on_create', 'always']),
})


@FUZZ
@given(extension_params, st.one_of(st.none(), json_like, st.fixed_dictionaries({'properties': json_like})), json_like)
def test_extension_logic(params, current, cluster):
    """Desired-vs-current comparison, preflight rules and redaction over whatever ARM might return."""
    try:
        extension.validate_params(params)
        extension.desired_properties(params)
        if isinstance(current, dict):
            extension.compare(params, current)
            extension.redact_extension(current)
            extension.failure_message(current)
            extension.diff_view(params, current)
    except KueueOpsError as exc:
        assert exc.message()
    if isinstance(cluster, dict):
        try:
            extension.preflight_cluster(cluster)
        except KueueOpsError as exc:
            assert exc.message()
