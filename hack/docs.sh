#!/usr/bin/env bash
# Build the collection's docs site the way Ansible's own docs are built (make docs): `antsibull-docs sphinx-init` writes
# the Sphinx project for kueueops.aks, and the build.sh it writes runs `antsibull-docs collection` (a page per module,
# filter and role from the plugins' DOCUMENTATION and the roles' meta/argument_specs.yml, the guides of docs/docsite/rst
# with docs/docsite/extra-docs.yml and links.yml, the indexes) and `sphinx-build -W --keep-going`: a warning fails it.
#
#   hack/docs.sh                 # the site in build/docs/build/html (index.html)
#   DOCS_OUT=/tmp/site hack/docs.sh
#
# Offline by construction. sphinx-init's conf.py maps four intersphinx inventories on the internet (Python 2 and 3,
# Jinja2, Ansible); the pages reference only Ansible's docs, through a few labels (antsibull-docs' notes on action
# plugins, return values and configuration, and M(ansible.builtin.debug)). The conf.py is therefore given one
# inventory, ansible_devel, read from a file this script writes (ANSIBLE_REFS below: label, page and title on
# docs.ansible.com), and no other: the references resolve to the real pages, nothing is fetched, and a reference to
# a label not in it is an undefined label, which fails the build (add the label here). The whole build runs in
# hack/offline.sh, a network namespace with nothing but loopback. And the theme's logo links to the site's own index
# rather than to "/" (its home on docs.ansible.com), so the site works from any folder.
#
# Its venv (.venv-docs: hack/docs-requirements.txt) is built once per set of requirements into ~/.cache/kueueops/venvs
# and copied after (hack/venv.sh). The collection is read from this checkout.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/.venv-docs
OUT=${DOCS_OUT:-$ROOT/build/docs}
# label, page on docs.ansible.com/projects/ansible/devel/ (with its anchor), title
ANSIBLE_REFS='
action_plugins	plugins/action.html#action-plugins	Action plugins
common_return_values	reference_appendices/common_return_values.html#common-return-values	Return Values
ansible_configuration_settings	reference_appendices/config.html#ansible-configuration-settings	Ansible Configuration Settings
ansible_collections.ansible.builtin.debug_module	collections/ansible/builtin/debug_module.html#ansible-collections-ansible-builtin-debug-module	ansible.builtin.debug module
'

# (a relative path: the venv's cache key holds the arguments, and it is shared by every checkout)
(cd "$ROOT" && hack/venv.sh "$VENV" -r hack/docs-requirements.txt) >&2
link=$VENV/collections/ansible_collections/kueueops/aks
mkdir -p "$(dirname "$link")"
[ "$(readlink "$link")" = "$ROOT" ] || ln -sfn "$ROOT" "$link"
export PATH="$VENV/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$VENV/collections"

rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
mkdir -m 700 "$OUT"    # antsibull-docs writes only into a folder that no one else can write to
"$ROOT/hack/offline.sh" antsibull-docs sphinx-init --use-current --squash-hierarchy --fail-on-error \
    --project kueueops.aks --title "kueueops.aks" --copyright "kueueops contributors" \
    --dest-dir "$OUT" kueueops.aks >/dev/null

# The intersphinx inventory of the labels above (Sphinx's objects.inv, version 2), and the conf.py that reads it alone.
python3 - "$OUT/ansible_devel.inv" "$ANSIBLE_REFS" <<'PYEOF'
import sys, zlib
lines = [line.split("\t") for line in sys.argv[2].strip().splitlines()]
body = "".join("%s std:label -1 %s %s\n" % (label, uri, title) for label, uri, title in lines)
with open(sys.argv[1], "wb") as out:
    out.write(b"# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n"
              b"# The remainder of this file is compressed using zlib.\n" + zlib.compress(body.encode()))
PYEOF
cat >> "$OUT/conf.py" <<'PYEOF'

# kueueops.aks (hack/docs.sh): no inventory from the network; the labels the pages use, from a local file.
intersphinx_mapping = {
    'ansible_devel': ('https://docs.ansible.com/projects/ansible/devel/', '../ansible_devel.inv'),
}


# The theme's logo links to its documentation_home_url, "/": the root of the web server docs.ansible.com is. This
# site is a folder (file://, or any web path): the logo links to its own index, relative to each page.
def _home_is_the_index(app, pagename, templatename, context, doctree):
    context['theme_documentation_home_url'] = context['pathto'](app.config.root_doc)


def setup(app):
    app.connect('html-page-context', _home_is_the_index)
PYEOF

start=$(date +%s)
"$ROOT/hack/offline.sh" "$OUT/build.sh" >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; echo "docs.sh: the build failed (its log above)" >&2; exit 1; }
pages=$(find "$OUT/build/html" -name '*.html' | wc -l)
echo "docs.sh: $pages pages in $OUT/build/html (index.html), built in $(( $(date +%s) - start )) s, no warning"
