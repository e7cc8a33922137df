# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Human-readable status of a cluster from a ``kueue_verify`` result.

``render(results, fmt)`` takes ``{cluster name: kueue_verify result}`` and returns text
(fixed-width tables for the end of a play), Markdown (a wiki page, an AWX artifact) or
HTML. Pure functions: no Ansible, no Kubernetes client.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json

FORMATS = ('text', 'markdown', 'html')


def _flavors(queue):
    """``on-demand cpu 12/32, memory 40Gi/128Gi; spot cpu 0/64`` from a ClusterQueue entry."""
    parts = []
    for flavor in queue.get('flavors') or []:
        resources = ', '.join('%s %s/%s' % (r.get('name'), r.get('used', 0), r.get('nominal', '-'))
                              for r in flavor.get('resources') or [])
        parts.append(('%s %s' % (flavor.get('name'), resources)).strip())
    return '; '.join(parts) or '-'


def tables(result):
    """The tables of one cluster: ``[(title, header, rows)]``, every cell a string."""
    checks = [('PASS' if c.get('ok') else 'FAIL', str(c.get('name', '')), str(c.get('reason') or ''))
              for c in result.get('checks') or []]
    out = [('Checks', ('result', 'check', 'why'), checks)]
    queues = result.get('queues') or {}
    cqs = [(q.get('name', ''), q.get('cohort') or '-', _flavors(q), str(q.get('pending', 0)),
            str(q.get('admitted', 0)), 'yes' if q.get('active') else 'no (%s)' % (q.get('reason') or 'unknown'))
           for q in queues.get('cluster_queues') or []]
    lqs = [('%s/%s' % (q.get('namespace', ''), q.get('name', '')), q.get('cluster_queue') or '-',
            str(q.get('pending', 0)), str(q.get('admitted', 0)), 'yes' if q.get('active') else 'no')
           for q in queues.get('local_queues') or []]
    out.append(('ClusterQueues', ('ClusterQueue', 'cohort', 'flavors (used/nominal)', 'pending', 'admitted',
                                  'active'), cqs))
    out.append(('LocalQueues', ('LocalQueue', 'ClusterQueue', 'pending', 'admitted', 'active'), lqs))
    tokens = result.get('multikueue_tokens') or []
    if tokens:  # kueue_verify's multikueue_token_horizon, as status.yml asks for it (issue 40)
        out.append(('MultiKueue worker tokens', ('MultiKueueCluster', 'Secret', 'expires', 'state'), [
            (str(t.get('cluster', '')), str(t.get('secret') or '-'), str(t.get('expires') or '-'),
             ('WARNING: ' if t.get('warning') else '') + str(t.get('reason') or '')) for t in tokens]))
    out.extend(drift_tables(result.get('drift')))
    capacity = result.get('capacity')
    if isinstance(capacity, dict) and 'flavors' in capacity:  # a kueue_capacity_info result, as status.yml attaches it
        out.extend(capacity_tables(capacity))
        out.append(('Capacity notes', ('note',), [(str(note),) for note in capacity.get('notes') or []]))
    return out


def summary(result):
    failed = result.get('failed_checks') or []
    head = 'Kueue %s (%s)' % (result.get('version') or 'not found', result.get('install_method') or 'unknown')
    if failed:
        text = '%s: %d check(s) failed: %s' % (head, len(failed), ', '.join(failed))
    else:
        text = '%s: all %d checks passed' % (head, len(result.get('checks') or []))
    warned = [t for t in result.get('multikueue_tokens') or [] if t.get('warning')]
    tokens = 'MultiKueue: %d worker token(s) to re-issue' % len(warned) if warned else ''
    extra = [part for part in (drift_summary(result.get('drift')), capacity_summary(result.get('capacity')), tokens)
             if part]
    return '; '.join([text] + extra)


# ------------------------------------------------------------------ drift (kueue_drift_info)
VALUE_WIDTH = 60
DRIFT_STATES = ('missing', 'changed', 'extra', 'undeclared')


def drift_value(value):
    """A declared or live value in one cell: text as it is, anything else as compact JSON, at most VALUE_WIDTH
    characters."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(',', ':'))
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + '...'


def _object_name(ref):
    return '%s %s%s' % (ref.get('kind', ''), '%s/' % ref['namespace'] if ref.get('namespace') else '',
                        ref.get('name', ''))


def _managers(ref):
    return ', '.join(ref.get('managers') or []) or 'unknown'


def drift_summary(drift):
    """``drift: none`` or ``drift: 1 missing, 2 changed, ... 3 install key(s)``; '' without a drift report."""
    if not isinstance(drift, dict) or 'counts' not in drift:
        return ''
    counts = drift.get('counts') or {}
    parts = ['%d %s' % (counts[k], k) for k in ('missing', 'changed', 'extra', 'undeclared') if counts.get(k)]
    if counts.get('install'):
        parts.append('%d install key(s) differ' % counts['install'])
    return 'drift: %s' % (', '.join(parts) if parts else 'none')


def drift_tables(drift):
    """The two drift tables of one cluster (none without a drift report): queue objects (state, object, field,
    declared, live) and the install (source, key, declared, live)."""
    if not isinstance(drift, dict) or 'counts' not in drift:
        return []
    objects = drift.get('objects') or {}
    rows = [('missing', _object_name(r), '-', 'present', '(absent)') for r in objects.get('missing') or []]
    for ref in objects.get('changed') or []:
        rows.extend(('changed', _object_name(ref), f.get('field', ''), drift_value(f.get('declared')),
                     drift_value(f.get('live'))) for f in ref.get('fields') or [])
    rows.extend(('extra', _object_name(r), '-', '(no longer declared)', 'applied by kueueops')
                for r in objects.get('extra') or [])
    rows.extend(('undeclared', _object_name(r), '-', '(absent)', 'by %s' % _managers(r))
                for r in objects.get('undeclared') or [])
    install = drift.get('install') or {}
    inst = [(d.get('source', ''), d.get('key', ''), drift_value(d.get('declared')), drift_value(d.get('live')))
            for d in install.get('differences') or []]
    if not install.get('compared') and install.get('note'):
        inst.append(('not compared', '-', '-', install['note']))
    return [('Drift: queue objects', ('state', 'object', 'field', 'declared', 'live'), rows),
            ('Drift: install (%s)' % (install.get('method') or 'unknown'), ('source', 'key', 'declared', 'live'),
             inst)]


def _text_table(header, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]

    def line(cells):
        return '  '.join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return [line(header), line(['-' * w for w in widths])] + [line(r) for r in rows]


def _md_cell(value):
    return str(value).replace('|', '\\|').replace('\n', ' ')


def _tables_lines(titled_tables):
    """Text lines of ``[(title, header, rows)]``: each table under its title, or ``<title>: none``."""
    lines = []
    for title, header, rows in titled_tables:
        if not rows:
            lines.append('%s: none' % title)
            continue
        lines.append('%s:' % title)
        lines.extend('  ' + row for row in _text_table(header, rows))
    return lines


def render_lines(result, cluster=None):
    """Text lines for one cluster (what a debug task prints at the end of a play)."""
    return ['%s%s' % ('%s: ' % cluster if cluster else '', summary(result))] + _tables_lines(tables(result))


def render(results, fmt='text'):
    """The report of several clusters (``{name: kueue_verify result}``) as one string."""
    if fmt not in FORMATS:
        raise ValueError('format must be one of %s, got %r' % (', '.join(FORMATS), fmt))
    chunks = []
    for cluster in sorted(results):
        result = results[cluster] or {}
        if fmt == 'text':
            chunks.append('\n'.join(render_lines(result, cluster)))
            continue
        if fmt == 'markdown':
            part = ['## %s' % cluster, '', summary(result), '']
            for title, header, rows in tables(result):
                part.extend(['### %s' % title, ''])
                if not rows:
                    part.extend(['none', ''])
                    continue
                part.append('| %s |' % ' | '.join(header))
                part.append('|%s|' % '|'.join('---' for dummy in header))
                part.extend('| %s |' % ' | '.join(_md_cell(c) for c in row) for row in rows)
                part.append('')
            chunks.append('\n'.join(part))
            continue
        part = ['<section><h2>%s</h2>' % html.escape(cluster), '<p>%s</p>' % html.escape(summary(result))]
        for title, header, rows in tables(result):
            part.append('<h3>%s</h3>' % html.escape(title))
            if not rows:
                part.append('<p>none</p>')
                continue
            part.append('<table><thead><tr>%s</tr></thead><tbody>' % ''.join(
                '<th>%s</th>' % html.escape(h) for h in header))
            for row in rows:
                css = ' class="fail"' if row[0] in ('FAIL',) + DRIFT_STATES else ''
                part.append('<tr%s>%s</tr>' % (css, ''.join('<td>%s</td>' % html.escape(str(c)) for c in row)))
            part.append('</tbody></table>')
        part.append('</section>')
        chunks.append('\n'.join(part))
    if fmt == 'markdown':
        return '# Kueue status\n\n' + '\n'.join(chunks)
    if fmt == 'html':
        return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Kueue status</title><style>'
                'table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}'
                'tr.fail td{background:#fdd}</style></head><body><h1>Kueue status</h1>\n'
                + '\n'.join(chunks) + '\n</body></html>\n')
    return '\n\n'.join(chunks)


# ------------------------------------------------------------------ capacity (kueue_capacity_info)
def _capacity_nodes(flavor):
    parts = []
    if flavor.get('nodes'):
        parts.append('%d node(s)' % len(flavor['nodes']))
    if flavor.get('pools'):
        parts.append('pool(s) %s' % ', '.join(flavor['pools']))
    return ', '.join(parts) or 'none'


def _capacity_queues(resource):
    return '; '.join('%s %s%s' % (q.get('owner', '').split(' ', 1)[-1], q.get('nominal'),
                                  ' (up to %s)' % q['max_with_borrowing']
                                  if q.get('max_with_borrowing') not in (None, q.get('nominal')) else '')
                     for q in resource.get('queues') or []) or '-'


def capacity_tables(result):
    """The capacity table of one cluster (a ``kueue_capacity_info`` result): ``[(title, header, rows)]``: per
    ResourceFlavor and resource, what its nodes offer, the nominal quota on it, the ratio, the quotas by owner."""
    rows = []
    for flavor in result.get('flavors') or []:
        resources = flavor.get('resources') or [{}]
        for res in resources:
            ratio = res.get('ratio')
            rows.append((str(flavor.get('name', '')), _capacity_nodes(flavor), str(res.get('resource') or '-'),
                         str(res.get('allocatable') or '-'), str(res.get('nominal') or '-'),
                         '%.2fx' % ratio if ratio is not None else '-', _capacity_queues(res)))
    findings = [(f.get('severity', ''), f.get('message', '')) for f in result.get('findings') or []]
    return [('Capacity', ('ResourceFlavor', 'nodes', 'resource', 'allocatable', 'nominal', 'quota/allocatable',
                          'quotas (with borrowing)'), rows),
            ('Capacity findings', ('severity', 'finding'), findings)]


def capacity_summary(capacity):
    """``capacity: 2 warning(s)`` or ``capacity: no warning``; '' without a capacity result."""
    if not isinstance(capacity, dict) or 'flavors' not in capacity:
        return ''
    warnings = [f for f in capacity.get('findings') or [] if f.get('severity') == 'warning']
    return 'capacity: %s' % ('%d warning(s)' % len(warnings) if warnings else 'no warning')


def capacity_lines(result, cluster=None):
    """Text lines of the capacity check of one cluster (what status.yml and configure_queues print)."""
    warnings = [f for f in result.get('findings') or [] if f.get('severity') == 'warning']
    lines = ['%sCapacity of %d ResourceFlavor(s): %s' % (
        '%s: ' % cluster if cluster else '', len(result.get('flavors') or []),
        '%d warning(s)' % len(warnings) if warnings else 'no warning')]
    lines.extend(_tables_lines(capacity_tables(result)))
    lines.extend('note: %s' % note for note in result.get('notes') or [])
    return lines
