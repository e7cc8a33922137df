"""The tested ansible-core matrix is stated four times: hack/matrix.sh (what CI runs), meta/runtime.yml's comment,
the README's supported matrix (what users read) and the detailed table of docs/dev/testing.md (moved there from the
README, issue 43). They must say the same (issue 41)."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _matrix():
    """{release: what CI runs on it} from hack/matrix.sh: 'sanity', 'playbooks' (a hack/compat.sh job), 'all'."""
    script = ('source hack/matrix.sh; echo "${MATRIX_SANITY[*]}"; '
              'for r in ${MATRIX_SANITY[*]} 2.16; do matrix_spec $r; done')
    out = subprocess.run(['bash', '-c', script], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    lines = out.split('\n')
    runs = {'2.19': {'sanity', 'playbooks'}, '2.16': {'playbooks'}}
    for release in lines[0].split():
        runs.setdefault(release, set()).add('sanity')
    compat = open(os.path.join(ROOT, 'hack', 'compat.sh')).read()
    for release in re.findall(r'^    (2\.\d+)\) VENV=', compat, re.M):
        runs.setdefault(release, set()).add('playbooks')
    specs = dict(zip(lines[0].split() + ['2.16'], lines[1:]))
    return runs, specs


def test_specs_take_the_release_line():
    runs, specs = _matrix()
    for release, spec in specs.items():
        assert re.match(r'^ansible-core~=%s\.0(rc\d+|b\d+)?$' % re.escape(release), spec), (release, spec)
    assert set(runs) == {'2.16', '2.19', '2.20', '2.21', '2.22'}
    assert runs['2.21'] == {'sanity', 'playbooks'}


def test_runtime_yml_states_the_matrix():
    runs, _ = _matrix()
    text = open(os.path.join(ROOT, 'meta', 'runtime.yml')).read()
    stated = dict(re.findall(r'^#   ansible-core (2\.\d+) \(Python [^)]*\): (.*)$', text, re.M))
    assert set(stated) == set(runs), stated
    for release, what in runs.items():
        assert ('ansible-test sanity' in stated[release]) == ('sanity' in what), (release, stated[release])
        assert ('playbooks' in stated[release] or 'every test' in stated[release]) == ('playbooks' in what), release


def _states_the_matrix(path):
    runs, _ = _matrix()
    text = open(os.path.join(ROOT, path)).read()
    rows = dict(re.findall(r'^\| ansible-core (2\.\d+) \|[^|]*\|[^|]*\| ([^|]*) \|', text, re.M))
    assert set(rows) == set(runs), rows
    for release, what in runs.items():
        assert ('sanity' in rows[release]) == ('sanity' in what), (release, rows[release])


def test_readme_states_the_matrix():
    _states_the_matrix('README.md')


def test_testing_doc_states_the_matrix():
    _states_the_matrix(os.path.join('docs', 'dev', 'testing.md'))
