# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one version parser of the collection (issue 14, item 6): Kueue releases (``v0.19.2``), chart versions
(``0.19.2``), the managed extension's versions in AKS's own form (``0.19.6-aks.0.4.4``: Kueue 0.19.6, AKS
packaging 0.4.4), helm's own version (``v3.19.5+g1234``) and Kubernetes versions (``1.34.1``, a minor ``1.34``).

The form: optional spaces and a ``v``, ``MAJOR.MINOR``, an optional ``.PATCH``, then optionally ``-`` or ``+`` and a
non-empty suffix of letters, digits, ``.``, ``+`` and ``-`` (a pre-release, a build, AKS's packaging). Pure logic.
"""

import re
from collections import namedtuple

_VERSION_RE = re.compile(r'^v?(\d+)\.(\d+)(?:\.(\d+))?(?:([-+])([0-9A-Za-z.+-]+))?$', re.IGNORECASE)


class Version(namedtuple('Version', 'major minor patch separator suffix')):
    """A parsed version; ``patch`` is None for a bare ``MAJOR.MINOR``, ``suffix`` '' when there is none."""

    __slots__ = ()

    @property
    def minor_text(self):
        """``'0.19'``."""
        return '%d.%d' % (self.major, self.minor)

    @property
    def core(self):
        """(major, minor, patch) with a missing patch as 0: what orders two releases of Kueue. The suffix is left
        out: ``0.19.6-aks.0.4.4`` is Kueue 0.19.6."""
        return (self.major, self.minor, self.patch or 0)

    @property
    def release_text(self):
        """The Kueue release, ``'0.19.6'`` (a missing patch is 0), whatever the form: chart, tag or AKS's."""
        return '%d.%d.%d' % self.core

    @property
    def text(self):
        """The version as written, without the ``v``: ``0.19.6-aks.0.4.4``."""
        out = self.minor_text + ('' if self.patch is None else '.%d' % self.patch)
        return out + (self.separator + self.suffix if self.suffix else '')


def parse(text, patch=False):
    """The ``Version`` of ``text``, or None when it is not one (or, with ``patch=True``, has no patch number)."""
    if text is None:
        return None
    match = _VERSION_RE.match(str(text).strip())
    if not match:
        return None
    major, minor, patch_number, separator, suffix = match.groups()
    if patch and patch_number is None:
        return None
    return Version(int(major), int(minor), None if patch_number is None else int(patch_number), separator or '',
                   suffix or '')


def minor_key(text):
    """``(major, minor)`` of a version or a bare minor (``'0.19'``, ``'v0.19.2'`` -> ``(0, 19)``): what orders two
    minors; None when ``text`` is not a version."""
    parsed = parse(text)
    return None if parsed is None else (parsed.major, parsed.minor)


def same_release(candidates, version):
    """The versions of ``candidates`` that are the same Kueue release as ``version`` (equal ``core``), in their
    order: the chart version ``0.19.2`` and the extension's ``0.19.2-aks.0.4.4`` are one release. [] when
    ``version`` is not a version."""
    wanted = parse(version)
    if wanted is None:
        return []
    return [c for c in candidates if parse(c) is not None and parse(c).core == wanted.core]
