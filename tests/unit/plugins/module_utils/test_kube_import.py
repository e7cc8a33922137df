"""module_utils/kube/kube_import.py: the one import of the kubernetes client, lazy on kubernetes < 37.

Each case runs in a fresh interpreter (the unit tests' own process imported kubernetes long ago), with the
collection on sys.path as tests/unit/conftest.py puts it.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kube import kube_import

# .../collections/ansible_collections/kueueops/aks/plugins/module_utils/kube/kube_import.py -> .../collections
COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(kube_import.__file__), *[os.pardir] * 6))
KUBERNETES_VERSION = tuple(int(p) for p in __import__('kubernetes').__version__.split('.')[:1])


def fresh(code, extra_path=None):
    """Run ``code`` in a new interpreter; it prints one JSON document, returned decoded."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([p for p in (extra_path, COLLECTIONS) if p]))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


IMPORT = "from ansible_collections.kueueops.aks.plugins.module_utils.kube import kube_import as ki\n"


# A skip about the platform, not a missing artifact (tests/prerequisites.py): kube_import's laziness exists only on
# kubernetes < 37, so this runs where the venv has one (the main run, kubernetes 36) and has nothing to test on 37+
# (the 2.16 and 2.21 jobs), where the other tests of this file run the client as it is.
@pytest.mark.skipif(KUBERNETES_VERSION >= (37,), reason='kubernetes >= 37 is lazy itself: imported as it is')
def test_the_client_is_imported_lazily_and_works_as_the_eager_one():
    out = fresh(IMPORT + textwrap.dedent("""
    import json, sys
    loaded = sorted(m for m in sys.modules if m.startswith('kubernetes'))
    k8s = ki.k8s
    api = k8s.ApiClient()
    # A response is turned into models the way the client does it: getattr(kubernetes.client.models, name).
    class Response:
        data = json.dumps({'kind': 'NamespaceList', 'apiVersion': 'v1', 'metadata': {},
                           'items': [{'metadata': {'name': 'team-nlp', 'labels': {'a': 'b'}}}]})
    namespaces = api.deserialize(Response(), 'V1NamespaceList')
    import kubernetes
    print(json.dumps({
        'loaded_before_use': len(loaded),
        'core_module': k8s.CoreV1Api.__module__,
        'namespace': namespaces.items[0].metadata.name, 'labels': namespaces.items[0].metadata.labels,
        'model_type': type(namespaces.items[0]).__name__,
        'version': kubernetes.__version__ == k8s.__version__,
        'watch': ki.k8s_watch.Watch.__module__, 'config': ki.k8s_config.new_client_from_config.__module__,
        'api_exception': ki.ApiException.__module__, 'has': ki.HAS_KUBERNETES,
        'not_loaded': 'kubernetes.client.api.certificates_v1_api' not in sys.modules,
    }))
    """))
    assert out['loaded_before_use'] < 200, out  # the eager import loads about 865
    assert out['core_module'] == 'kubernetes.client.api.core_v1_api'
    assert (out['namespace'], out['labels'], out['model_type']) == ('team-nlp', {'a': 'b'}, 'V1Namespace')
    assert out['version'] is True
    assert out['watch'] == 'kubernetes.watch.watch'
    assert out['config'] == 'kubernetes.config.kube_config'
    assert out['api_exception'] == 'kubernetes.client.exceptions'
    assert out['has'] is True
    assert out['not_loaded'] is True


def test_a_client_imported_before_is_left_as_it_is():
    out = fresh("import kubernetes, sys\nreal = sys.modules['kubernetes']\n" + IMPORT + textwrap.dedent("""
    import json
    print(json.dumps({'same': sys.modules['kubernetes'] is real, 'client': ki.k8s is real.client}))
    """))
    assert out == {'same': True, 'client': True}


def test_without_the_client_the_module_says_so(tmp_path):
    (tmp_path / 'sitecustomize.py').write_text(textwrap.dedent("""
        import sys
        class NoKubernetes:
            def find_spec(self, name, path=None, target=None):
                if name == 'kubernetes' or name.startswith('kubernetes.'):
                    raise ImportError('No module named %r' % name)
        sys.meta_path.insert(0, NoKubernetes())
    """))
    out = fresh(IMPORT + textwrap.dedent("""
    import json
    print(json.dumps({'has': ki.HAS_KUBERNETES, 'k8s': ki.k8s, 'error': 'ImportError' in ki.KUBERNETES_IMPORT_ERROR,
                      'exception': issubclass(ki.ApiException, Exception) and ki.ApiException.__module__ == ki.__name__,
                      'config_exception': ki.ConfigException.__module__ == ki.__name__}))
    """), extra_path=str(tmp_path))
    assert out == {'has': False, 'k8s': None, 'error': True, 'exception': True, 'config_exception': True}


def test_a_name_the_from_lines_do_not_give_runs_the_real_init(tmp_path):
    """A client release that defines a name another way: the lazy package runs the real __init__.py in itself."""
    pkg = tmp_path / 'fakekube'
    pkg.mkdir()
    (pkg / 'sub.py').write_text("A = 'from sub'\n")
    (pkg / 'other.py').write_text("C = 'from other'\n")
    (pkg / '__init__.py').write_text("__version__ = '9.9.9'\nfrom fakekube.sub import A\nfrom fakekube.other import C as D\n"
                                     "B = 'defined in __init__'\n")
    out = fresh(IMPORT + textwrap.dedent("""
    import json, sys
    init = %r
    lazy = ki._lazy_package('fakekube', init, open(init).read())
    sys.modules['fakekube'] = lazy
    before = 'fakekube.sub' in sys.modules
    a = lazy.A
    after_a = ('fakekube.sub' in sys.modules, 'fakekube.other' in sys.modules)
    d = lazy.D
    b = lazy.B
    try:
        lazy.NOTHING
        missing = None
    except AttributeError as exc:
        missing = str(exc)
    print(json.dumps({'before': before, 'a': a, 'after_a': after_a, 'd': d, 'b': b, 'version': lazy.__version__,
                      'missing': missing}))
    """ % str(pkg / '__init__.py')), extra_path=str(tmp_path))
    assert out['before'] is False
    assert out['a'] == 'from sub' and out['after_a'] == [True, False]
    assert out['d'] == 'from other'
    assert out['b'] == 'defined in __init__'
    assert out['version'] == '9.9.9'
    assert 'NOTHING' in out['missing']
