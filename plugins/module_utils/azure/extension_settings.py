# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The managed extension's configuration settings and version as ARM holds them: name-value pairs of strings and a
version without a ``v``. Its own small file so that the readers that compare an extension (kueue_drift_info) do not
carry extension.py's preflight, release train and catalog in their payload; extension.py uses it too.
"""

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError


def setting_value(key, value, field):
    """ARM configuration settings are strings; render YAML scalars the way Helm --set reads them."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    raise KueueOpsError('%s must be a string, number or boolean (ARM takes name-value pairs of strings), got %s'
                        % (key, type(value).__name__), field=field,
                        fix='give a scalar; for a list or map value use the chart\'s dotted key for each item, '
                            'or JSON/YAML text as the value')


def normalize_settings(settings, field):
    if settings is None:
        return None
    return dict((str(key), setting_value(key, value, field)) for key, value in settings.items())


def normalize_version(version):
    if version is None:
        return None
    text = str(version).strip()
    return text[1:] if text[:1] in ('v', 'V') else text
