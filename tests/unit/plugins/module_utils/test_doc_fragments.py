"""The doc fragments document exactly the argspecs the modules use."""

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.doc_fragments import azure_auth as azure_doc
from ansible_collections.kueueops.aks.plugins.doc_fragments import kube_auth as kube_doc
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_auth import AZURE_AUTH_ARGSPEC
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import KUBE_AUTH_ARGSPEC


@pytest.mark.parametrize('fragment,argspec', [(kube_doc, KUBE_AUTH_ARGSPEC), (azure_doc, AZURE_AUTH_ARGSPEC)])
def test_fragment_matches_argspec(fragment, argspec):
    options = yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)['options']
    assert set(options) == set(argspec)
    for name, spec in argspec.items():
        doc = options[name]
        assert doc['type'] == spec.get('type', 'str'), name
        assert doc.get('aliases', []) == spec.get('aliases', []), name
        assert doc.get('default') == spec.get('default'), name
        assert doc.get('choices') == spec.get('choices'), name
        assert doc.get('elements') == spec.get('elements'), name
        if spec.get('options'):  # proxy_headers: each key has its variable
            assert set(doc['suboptions']) == set(spec['options']), name
            for key, sub in spec['options'].items():
                assert doc['suboptions'][key]['type'] == sub['type'], (name, key)
                assert sub['fallback'][1][0] in ' '.join(doc['suboptions'][key]['description']), (name, key)
            continue
        env = spec['fallback'][1][0]
        assert env in ' '.join(doc['description']), (name, env)
