# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Kubernetes minors the collection supports and is tested on, stated once (issue 45): the managed Kueue
extension's minimum on AKS, which its preflight refuses below, and the newest minor CI runs on (hack/versions.env's
KUBE_VERSION_NEWEST; tests/unit/test_kubernetes_support.py keeps the two equal). A cluster newer than that is not
refused - AKS supports three GA minors at a time and adds one every few months - but warned about, naming the newest
tested minor. Pure logic.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kueueops.aks.plugins.module_utils.common import versions

# The managed extension's minimum (AKS); the Helm path is tested on it too.
MIN_KUBERNETES = (1, 34)
# The newest Kubernetes minor CI runs the suite on (hack/versions.env KUBE_VERSION_NEWEST).
NEWEST_TESTED_KUBERNETES = (1, 37)


def minor_of(version):
    """(1, 34) of a Kubernetes version (``1.34.1``, ``v1.34.5``, ``v1.37.2+aks``); None when there is none."""
    parsed = versions.parse(version)
    return None if parsed is None else (parsed.major, parsed.minor)


def tested_text():
    """``'1.34 to 1.37'``: the range the collection is tested on."""
    return '%d.%d to %d.%d' % (MIN_KUBERNETES + NEWEST_TESTED_KUBERNETES)


def newer_than_tested_warning(version, what='the cluster'):
    """The warning for a Kubernetes ``version`` newer than the newest tested minor, or None (an older, tested or
    unreadable version gives none: the minimum is the preflight's to refuse)."""
    minor = minor_of(version)
    if minor is None or minor <= NEWEST_TESTED_KUBERNETES:
        return None
    return ('%s runs Kubernetes %s, newer than the newest minor kueueops.aks is tested on (%d.%d; tested: %s). It is '
            'not refused; check the collection\'s release notes for a release tested on %d.%d before relying on it.'
            % ((what, version) + NEWEST_TESTED_KUBERNETES + (tested_text(),) + minor))
