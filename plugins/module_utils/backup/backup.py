# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kueue configuration backups: the pure logic behind kueue_backup.

Nothing here talks to a cluster or imports Ansible:

* ``normalise``: a live object as a clean, re-appliable manifest (no status, no
  server bookkeeping, no Kueue-owned finalizers);
* the layout of a backup folder: a file per kind, numbered in dependency order,
  objects sorted by namespace/name, keys sorted, a stable YAML dump; so two
  backups of the same state have byte-identical object files;
* ``manifest.json``: what was backed up, from where, and the sha256 of every
  file; ``verify_backup(path)`` checks a folder against it;
* ``write_backup``: an atomic write (a temporary folder next to the destination,
  fsync, rename into place; folders 0700, files 0600 whatever the umask);
* ``compare``: the objects of a backup against the live ones, object by object;
* ``workload_counts``: pending/admitted Workloads per LocalQueue and ClusterQueue.

Layout. Every kind is written as ``NN-<plural>.yaml`` in ``kueue_queues``' own
dependency order (the Secrets MultiKueueClusters use, with ``include_secrets``,
first), so a backup folder is directly usable, whole, as the ``src`` of
``kueue_queues`` (which reads every ``.yml``/``.yaml`` file of a folder);
``manifest.json`` names the module that restores each file.

Part of this file reads the cluster (``Exporter``, ``snapshot``): what a backup
holds and what ``kueue_info`` reports come from the same reads.
"""

import copy
import datetime
import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections import namedtuple

from ansible_collections.kueueops.aks.plugins.module_utils.kube import cluster_identity
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.common.files import discard
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues as q
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import BY_NAME, GROUP, KIND_ORDER, PLURALS, key_label, obj_key

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.common import yaml_docs
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.reader import Exporter, image_tag, snapshot, sort_objects, workload_counts

FORMAT = 'kueueops.aks/kueue_backup/v1'
MANIFEST = cluster_identity.BACKUP_MANIFEST
# Files that later steps add to a backup folder, outside the manifest's checksums:
# the role uninstall_with_backup records there the GitOps objects it paused
# (kueueops.aks.kueue_gitops), which restore.yml resumes. They are JSON, so no
# restore from the folder applies them.
SIDECARS = ('gitops.json',)
QUEUES_TOOL = 'kueueops.aks.kueue_queues'

_SAFE_NAME_RE = re.compile(r'[^A-Za-z0-9._-]+')
_CHUNK = 1024 * 1024


class BackupError(KueueOpsError):
    """A backup folder is not intact; ``problems`` names every file at fault."""

    def __init__(self, problems, path, fix=None):
        self.problems = list(problems)
        self.path = path
        text = 'backup %s is not intact: %s' % (path, '; '.join(self.problems))
        super().__init__(text, field='path', fix=fix or 'restore from another backup, or take a new one')


# --------------------------------------------------------------- objects
def restore_tool(kind):
    """The module that restores ``kind``: kueue_queues, for every kind of a backup."""
    if kind not in PLURALS:
        raise ValueError('not a kind of a Kueue backup: %r' % (kind,))
    return QUEUES_TOOL


def file_name(kind):
    """``NN-<plural>.yaml``, numbered in dependency order."""
    if kind in BY_NAME:
        return '%02d-%s.yaml' % (BY_NAME[kind].number, BY_NAME[kind].plural)
    raise ValueError('not a kind of a Kueue backup: %r' % (kind,))


# ------------------------------------------------------------------ dumps
def dump_objects(kind, api_version, objects):
    """The bytes of one kind's file: a header comment, then one YAML document per object.

    Keys sorted, block style, no line folding, UTF-8: the same objects always give
    the same bytes.
    """
    if yaml is None:  # pragma: no cover
        raise KueueOpsError('PyYAML is not installed', fix='pip install PyYAML in the Python that runs the module')
    objects = sort_objects(objects)
    header = '# kueueops.aks.kueue_backup: %s (%s), %d object(s); restore with %s\n' % (
        kind, api_version, len(objects), restore_tool(kind))
    body = ''
    if objects:
        body = yaml.safe_dump_all(objects, explicit_start=True, default_flow_style=False, sort_keys=True,
                                  allow_unicode=True, width=2 ** 20, indent=2)
    return (header + body).encode('utf-8')


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        while True:
            chunk = handle.read(_CHUNK)
            if not chunk:
                break
            digest.update(chunk)
    return digest.hexdigest()


def render(objects_by_kind, api_versions):
    """The files of a backup: ``[(file name, kind, count, bytes)]`` in dependency order.

    ``objects_by_kind`` maps kind -> normalised objects; a kind present with no
    objects still gets its (header-only) file, so the layout does not depend on
    the content. ``api_versions`` maps kind -> apiVersion written in the header.
    """
    out = []
    for kind in KIND_ORDER:
        if kind not in objects_by_kind:
            continue
        objects = objects_by_kind[kind]
        out.append((file_name(kind), kind, len(objects), dump_objects(kind, api_versions.get(kind, ''), objects)))
    return out


class Contents(namedtuple('Contents', 'api_versions excluded workloads include_secrets')):
    """What a backup records besides its files: the version of each kind (``{kind: version}``), the objects left
    out and why, the Workloads counted, and whether it holds the MultiKueue Secrets."""

    __slots__ = ()


def build_manifest(files, created, cluster, kueue, contents):
    """The manifest dict. ``files`` as returned by ``render``; ``created`` a datetime (UTC); ``contents`` a
    ``Contents``."""
    if isinstance(created, datetime.datetime):
        created = created.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    api_versions = contents.api_versions
    queues_version = api_versions.get('ClusterQueue')
    return {
        'format': FORMAT,
        'created': created,
        'cluster': cluster,
        'kueue': kueue,
        'api_version': queues_version and '%s/%s' % (GROUP, queues_version),
        'api_versions': dict((k, v if k == 'Secret' else '%s/%s' % (GROUP, v)) for k, v in api_versions.items()),
        'counts': dict((kind, count) for _name, kind, count, _data in files),
        'files': dict((name, {'kind': kind, 'count': count, 'sha256': sha256_bytes(data),
                              'restore_with': restore_tool(kind)})
                      for name, kind, count, data in files),
        'excluded': contents.excluded,
        'workloads': contents.workloads,
        'include_secrets': bool(contents.include_secrets),
    }


def dump_manifest(manifest):
    return (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + '\n').encode('utf-8')


def folder_name(cluster_name, now):
    """``<cluster name>-<UTC timestamp>``, e.g. ``aks-prod-20250601T120000Z``."""
    base = _SAFE_NAME_RE.sub('-', cluster_name or '').strip('.-') or 'kueue'
    return '%s-%s' % (base, now.astimezone(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ'))


# ---------------------------------------------------------------- reading
def read_manifest(path):
    """The manifest dict of a backup folder; raises BackupError when it is missing or unreadable."""
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.isdir(path):
        raise BackupError(['%s is not a folder' % path], path, fix='give the path of a backup folder')
    try:
        with open(manifest_path, 'rb') as handle:
            manifest = json.loads(handle.read().decode('utf-8'))
    except OSError as exc:
        raise BackupError(['%s: cannot be read (%s); not a kueue_backup folder, or an incomplete one'
                           % (MANIFEST, exc.strerror or exc)], path)
    except ValueError as exc:
        raise BackupError(['%s: not valid JSON (%s)' % (MANIFEST, exc)], path)
    if not isinstance(manifest, dict) or manifest.get('format') != FORMAT or not isinstance(manifest.get('files'), dict):
        raise BackupError(['%s: not a kueue_backup manifest (format %r)' % (
            MANIFEST, manifest.get('format') if isinstance(manifest, dict) else None)], path)
    return manifest


def check_backup(path):
    """Every problem of a backup folder against its manifest (an empty list when intact).

    Each problem starts with the file name: a file whose sha256 differs from the
    manifest (changed after the backup), a file the manifest lists that is
    missing, and a file in the folder that the manifest does not list (it would be
    applied by a restore from the folder). The ``SIDECARS`` files (regular files
    only) are not part of the manifest and not reported.
    """
    manifest = read_manifest(path)
    problems = []
    listed = manifest['files']
    for name in sorted(listed):
        info = listed[name] if isinstance(listed[name], dict) else {}
        if name != os.path.basename(name) or name in ('.', '..', MANIFEST):
            problems.append('%s: not a valid file name in %s' % (name, MANIFEST))
            continue
        full = os.path.join(path, name)
        if not os.path.isfile(full) or os.path.islink(full):
            problems.append('%s: missing (listed in %s)' % (name, MANIFEST))
            continue
        actual = sha256_file(full)
        if actual != info.get('sha256'):
            problems.append('%s: sha256 %s does not match %s (%s); the file was changed after the backup'
                            % (name, actual, MANIFEST, info.get('sha256')))
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names + dirs):
            rel = os.path.relpath(os.path.join(root, name), path)
            if rel == MANIFEST or rel in listed:
                continue
            if rel in SIDECARS and os.path.isfile(os.path.join(root, name)) \
                    and not os.path.islink(os.path.join(root, name)):
                continue
            problems.append('%s: not part of the backup (not listed in %s)' % (rel, MANIFEST))
        dirs[:] = []  # a backup has no subfolders; one is reported above and not entered
    return problems


def verify_backup(path):
    """Check a backup folder's files against the sha256 sums of its manifest.

    Returns the manifest dict; raises ``BackupError`` naming every file at fault.
    """
    problems = check_backup(path)
    if problems:
        raise BackupError(problems, path)
    return read_manifest(path)


def load_objects(path, manifest=None):
    """Every object of a backup folder, in file (dependency) order."""
    manifest = manifest or read_manifest(path)
    out = []
    for name in sorted(manifest['files']):
        with open(os.path.join(path, name), 'rb') as handle:
            text = handle.read().decode('utf-8')
        try:
            docs = yaml_docs.load_all(text)
        except yaml.YAMLError as exc:
            raise BackupError(['%s: not valid YAML (%s)' % (name, str(exc).replace('\n', ' '))], path)
        out.extend(d for d in docs if d is not None)
    return out


# --------------------------------------------------------------- compare
def _diff_paths(a, b, prefix, out, limit=5):
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key, _MISSING) != b.get(key, _MISSING) or (key in a) != (key in b):
                _diff_paths(a.get(key, _MISSING), b.get(key, _MISSING), '%s.%s' % (prefix, key) if prefix else key,
                            out, limit)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for idx, (x, y) in enumerate(zip(a, b)):
            if x != y:
                _diff_paths(x, y, '%s[%d]' % (prefix, idx), out, limit)
        return
    out.append(prefix or '(whole object)')


_MISSING = object()


def compare(backup_objects, live_objects):
    """Differences between the objects read back from a backup and the live ones
    (both normalised): one line per object, naming it and the fields that differ."""
    backup = dict((obj_key(o), o) for o in backup_objects)
    live = dict((obj_key(o), o) for o in live_objects)
    problems = []

    def order(key):
        rank = KIND_ORDER.index(key[0]) if key[0] in KIND_ORDER else len(KIND_ORDER)
        return (rank, key[1], key[2])

    for key in sorted(set(backup) | set(live), key=order):
        if key not in live:
            problems.append('%s is in the backup but no longer in the cluster' % key_label(key))
        elif key not in backup:
            problems.append('%s is in the cluster but not in the backup' % key_label(key))
        elif backup[key] != live[key]:
            paths = []
            _diff_paths(backup[key], live[key], '', paths)
            problems.append('%s differs from the cluster at %s' % (key_label(key), ', '.join(paths)))
    return problems


# -------------------------------------------------------------- workloads
# ------------------------------------------------------------------ write
def _write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BackupExists(KueueOpsError):
    """The destination folder already exists."""


def os_error(exc, where, field):
    """A KueueOpsError for a failed write under ``where``, naming ``field`` and the fix."""
    code = getattr(exc, 'errno', None)
    reason = exc.strerror or str(exc)
    fixes = {
        errno.ENOSPC: 'free space on that file system, or choose a %s on another one' % field,
        errno.EDQUOT: 'free space within the quota, or choose a %s on another file system' % field,
        errno.EROFS: 'the file system is read-only; choose a writable %s' % field,
        errno.EACCES: 'give the user running the module write access to %s, or choose another %s' % (where, field),
        errno.EPERM: 'give the user running the module write access to %s, or choose another %s' % (where, field),
        errno.ENOTDIR: '%s must be a folder (or not exist yet): something in that path is a file' % field,
        errno.EEXIST: '%s must be a folder (or not exist yet): something in that path is a file' % field,
    }
    return KueueOpsError('cannot write the backup under %s: %s (nothing was written)' % (where, reason), field=field,
                         fix=fixes.get(code, 'check that %s is a writable folder with free space' % field))


def prepare_parent(path, field):
    """Create the folder ``path`` (and missing parents, 0700) if needed.

    Returns the folders created, outermost first, for ``remove_created``.
    """
    created = []
    missing = []
    probe = os.path.abspath(path)
    while not os.path.lexists(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if os.path.lexists(probe) and not os.path.isdir(probe):
        raise KueueOpsError('cannot write the backup under %s: %s is not a folder (nothing was written)'
                            % (path, probe), field=field,
                            fix='%s must be a folder (or not exist yet); move the file %s away or choose another %s'
                            % (field, probe, field))
    try:
        for folder in reversed(missing):
            os.mkdir(folder, 0o700)
            created.append(folder)
            os.chmod(folder, 0o700)
    except OSError as exc:
        remove_created(created)
        raise os_error(exc, path, field)
    return created


def remove_created(created):
    """Remove the folders ``prepare_parent`` created, innermost first, if still empty."""
    for folder in reversed(created):
        try:
            os.rmdir(folder)
        except OSError:
            break


def write_backup(path, files, manifest_bytes, before_commit=None, field='dest', unique=False):
    """Write a backup folder at ``path`` atomically; returns the path written.

    ``files`` is ``[(name, bytes)]``. Everything is written into a temporary
    folder next to ``path`` (files 0600, folder 0700, each file fsynced), then
    ``before_commit(temp_folder)`` runs (it raises to abort), then the folder is
    renamed into place and the parent folder fsynced. The name is claimed with
    ``mkdir`` (atomic: an existing backup is never replaced) just before the
    rename. With ``unique``, a taken name gets a ``-2``, ``-3``... suffix instead
    of failing with ``BackupExists``. On any failure nothing is left behind.
    """
    parent = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(os.path.abspath(path))
    if not unique and os.path.lexists(path):
        raise BackupExists('%s already exists; refusing to overwrite an existing backup' % path, field=field,
                           fix='choose a new path (or give dest, under which a new folder is created)')
    try:
        temp = tempfile.mkdtemp(prefix='.%s.tmp-' % base, dir=parent)
    except OSError as exc:
        raise os_error(exc, parent, field)
    try:
        try:
            os.chmod(temp, 0o700)
            for name, data in files:
                _write_file(os.path.join(temp, name), data)
            _write_file(os.path.join(temp, MANIFEST), manifest_bytes)
            _fsync_dir(temp)
        except OSError as exc:
            raise os_error(exc, parent, field)
        if before_commit is not None:
            before_commit(temp)
        target = path
        suffix = 1
        while True:
            try:
                os.mkdir(target, 0o700)
                break
            except FileExistsError:
                if not unique:
                    raise BackupExists('%s already exists; refusing to overwrite an existing backup' % target,
                                       field=field, fix='choose a new path (or give dest, under which a new '
                                                        'folder is created)')
                suffix += 1
                target = '%s-%d' % (path, suffix)
            except OSError as exc:
                raise os_error(exc, parent, field)
        try:
            os.rename(temp, target)
        except OSError as exc:
            discard(os.rmdir, target)
            raise os_error(exc, parent, field)
        try:
            _fsync_dir(parent)
        except OSError:  # pragma: no cover - the rename is done; fsync of the parent is best effort
            pass
        return target
    finally:
        if os.path.isdir(temp):
            shutil.rmtree(temp, ignore_errors=True)


def flat(objects):
    return [o for kind in KIND_ORDER for o in objects.get(kind, [])]


def take(api_client, params, cluster_name, field, check_mode=False, identity=None):
    """One kueue_backup run on ``params`` (the module's options): export, write atomically, read back and compare
    with a fresh read of the cluster; in check mode, what would be written. ``identity``: the cluster's
    (cluster_identity.read), recorded in the manifest. Returns the module's result."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    exporter = Exporter(api_client, params['kueue_namespace'])
    exporter.discover()
    if params['aks_extension'] is None:
        params = dict(params, aks_extension=exporter.detect_aks_extension())
    cluster = dict(identity or {}, name=cluster_name, server=api_client.configuration.host,
                   resource_id=params['cluster_resource_id'])
    files, manifest = export(exporter, params, cluster, now)
    if params['path']:
        target, unique = os.path.abspath(params['path']), False
    else:
        target, unique = os.path.join(os.path.abspath(params['dest']), folder_name(cluster_name, now)), True
    if not unique and os.path.lexists(target):
        raise BackupExists('%s already exists; refusing to overwrite an existing backup' % target, field=field,
                           fix='choose a new path (or give dest, under which a new folder is created)')
    result = {
        'changed': True,
        'backup_path': target,
        'counts': manifest['counts'],
        'files': [dict(manifest['files'][name], name=name) for name, _kind, _count, _data in files],
        'excluded': manifest['excluded'],
        'workloads': manifest['workloads'],
        'manifest': manifest,
        'api_version': manifest['api_version'],
        'kueue_version': manifest['kueue']['version'],
        'verified': False,
    }
    if check_mode:
        return result
    created = prepare_parent(os.path.dirname(target), field)
    try:
        written = write_backup(target, [(name, data) for name, _kind, _count, data in files],
                               dump_manifest(manifest), before_commit=ReadBack(exporter, params, result, field),
                               field=field, unique=unique)
    except BaseException:
        remove_created(created)
        raise
    result['backup_path'] = written
    try:
        verify_backup(written)
    except BackupError:
        shutil.rmtree(written, ignore_errors=True)
        raise
    return result


def export(exporter, params, cluster, now):
    """``(files, manifest)``: the cluster's Kueue objects as the backup's files (``render``) and its manifest, taken
    ``now`` (``params``: the module's options, ``aks_extension`` known)."""
    image = exporter.manager_image()
    objects, excluded, raw_queues = snapshot(exporter, params['include_secrets'], params['include_aks_managed'],
                                             params['aks_extension'])
    workloads = workload_counts(exporter.list_workloads(), raw_queues.get('LocalQueue', []),
                                raw_queues.get('ClusterQueue', []))
    api_versions = dict(exporter.served)
    if params['include_secrets']:
        api_versions['Secret'] = 'v1'
    files = render(objects, dict((k, v if k == 'Secret' else '%s/%s' % (GROUP, v))
                                 for k, v in api_versions.items()))
    kueue = {'version': image_tag(image), 'image': image, 'namespace': params['kueue_namespace'],
             'aks_extension': bool(params['aks_extension'])}
    contents = Contents(api_versions, excluded, workloads, params['include_secrets'])
    return files, build_manifest(files, now, cluster, kueue, contents)


class ReadBack:
    """What write_backup calls on the written folder before it is committed: its files read back match the
    manifest and, with ``verify``, the objects match a fresh read of the cluster (then ``result['verified']``)."""

    def __init__(self, exporter, params, result, field):
        self.exporter = exporter
        self.params = params
        self.result = result
        self.field = field

    def __call__(self, temp):
        params, field, target = self.params, self.field, self.result['backup_path']
        problems = check_backup(temp)
        if problems:
            raise KueueOpsError('the files read back from %s do not match what was written: %s'
                                % (target, '; '.join(problems)), field=field,
                                fix='check the file system of %s (nothing was kept)' % field)
        if not params['verify']:
            return
        written = load_objects(temp)
        live, _excluded, _raw = snapshot(self.exporter, params['include_secrets'], params['include_aks_managed'],
                                         params['aks_extension'])
        differences = compare(written, flat(live))
        if differences:
            raise KueueOpsError('the backup does not match the live cluster (nothing was kept): %s'
                                % '; '.join(differences), field='verify',
                                fix='something changed the Kueue objects while the backup ran; pause what changes '
                                    'them (GitOps, other automation) and run again')
        self.result['verified'] = True


def convert_to_served(backup_objects, served):
    """The backup's objects at the versions the cluster serves (``served``: {kind: version}), and one line per
    field a conversion drops: such a field is lost in the cluster too, so the objects would compare equal."""
    converted, dropped = [], []
    for obj in backup_objects:
        kind = obj.get('kind')
        if kind in served:
            source = str(obj.get('apiVersion', '')).rsplit('/', 1)[-1]
            target = served[kind]
            if source != target:
                obj = copy.deepcopy(obj)
                problems = []
                q.convert(obj, source, target, key_label(obj_key(obj)), problems)
                obj['apiVersion'] = '%s/%s' % (GROUP, target)
                dropped.extend('%s: %s of the backup (%s) %s' % (p.obj, p.field, source, p.text) for p in problems)
        converted.append(obj)
    return converted, dropped


def lost_workloads(before, after):
    """What the Workload totals (``pending``, ``admitted``, ``finished``) show was lost between ``before`` (a backup's)
    and ``after`` (now): one line each, none when nothing was.

    A Workload finished at the backup may be gone for reasons of its own, not lost: its Job's
    ``ttlSecondsAfterFinished``, its Job deleted (the garbage collector takes the Workload some seconds later: a smoke
    test's, right after an install), Kueue's retention policy for finished Workloads. So finished ones are not
    required to stay. A Workload pending or admitted at the backup must still be there, pending, admitted or newly
    finished (the finished count above the backup's): fewer is a loss, and so is fewer admitted or newly finished than
    were admitted (an admission lost). Counts cannot tell an old finished Workload collected from a new one finishing
    meanwhile: when both happen during an upgrade, this reports a loss for the user to check (the safe side)."""
    newly_finished = max(0, after.get('finished', 0) - before.get('finished', 0))
    lost = []
    if after.get('pending', 0) + after.get('admitted', 0) + newly_finished < \
            before.get('pending', 0) + before.get('admitted', 0):
        lost.append('fewer Workloads than were pending or admitted at the backup')
    if after.get('admitted', 0) + newly_finished < before.get('admitted', 0):
        lost.append('fewer admitted (or newly finished) Workloads than were admitted at the backup')
    return lost


def compare_with_live(api_client, params, path, identity=None):
    """Compare the live cluster with the backup folder ``path`` (its checksums checked first, then that it is a
    backup of this cluster, ``identity``, unless ``allow_other_cluster``): every object of the backup, converted to
    the version the cluster serves now (queues.convert), against the live one, normalised the same way; and the
    Workloads counted now against the manifest's. Reads only. Returns ``{'matches', 'differences', 'workloads',
    'workloads_before', 'lost_workloads', 'same_cluster'}``."""
    try:
        manifest = verify_backup(path)
    except BackupError as exc:
        exc.field = 'compare_path'
        raise
    same_cluster = cluster_identity.check(manifest.get('cluster'), identity, 'the backup %s' % path, 'compare_path',
                                          'allow_other_cluster', params.get('allow_other_cluster'))
    backup_objects = load_objects(path, manifest)
    exporter = Exporter(api_client, params['kueue_namespace'])
    exporter.discover()
    aks_extension = params['aks_extension']
    if aks_extension is None:
        aks_extension = exporter.detect_aks_extension()
    include_secrets = bool(manifest.get('include_secrets'))
    live, _excluded, raw_queues = snapshot(exporter, include_secrets, params['include_aks_managed'], aks_extension)
    converted, dropped = convert_to_served(backup_objects, exporter.served)
    differences = dropped + compare(converted, flat(live))
    workloads = workload_counts(exporter.list_workloads(), raw_queues.get('LocalQueue', []),
                                raw_queues.get('ClusterQueue', []))
    lost = lost_workloads((manifest.get('workloads') or {}).get('total') or {}, workloads['total'])
    return {'matches': not differences and not lost, 'differences': differences, 'workloads': workloads,
            'workloads_before': manifest.get('workloads') or {}, 'lost_workloads': lost, 'backup_path': path,
            'same_cluster': same_cluster, 'changed': False}
