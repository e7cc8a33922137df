# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The collection's access to the Kubernetes API: JSON in, JSON out, on a ``kubernetes.client.ApiClient``.

Issue 14, item 2 (a cluster layer). One ``Cluster`` per module run wraps the ApiClient that ``kube_client`` builds
(kubeconfig, TLS, proxy, token refresh, impersonation) and owns:

- the request: path, query, body, the one request-timeout policy (``REQUEST_TIMEOUT`` per request unless a call
  gives its own), errors as the client raises them (``ApiException`` with ``status``, ``reason`` and ``body``;
  urllib3's connection errors), so ``kube_client.describe_kube_error`` and the fault drills see what they saw;
- reads: ``get`` (a 404 is ``None``), ``list`` (every page: ``limit`` and ``continue``), ``served`` (API
  discovery of one group version; a 404 is "not served"), ``deployment``;
- writes: ``create``, ``apply`` (server-side apply), ``patch`` (JSON merge patch), ``delete`` (a 404 is
  ``False``);
- ``watch``: the events of one watch request, decoded.

Why not the typed API classes (``CoreV1Api``, ``AppsV1Api``...): kubernetes 37 builds a pydantic model class for
every type an API class names when the class is first used, 1.2 CPU s for ``CoreV1Api``, 0.6 s for ``AppsV1Api``,
in every module process (bench/README.md, module import cost); and the results are read as the API returns them
(camelCase JSON), the way Kueue objects already were. The request goes through the ApiClient's own REST client,
which is the same on kubernetes 29 to 37 for a JSON body and a full URL.
"""

import json
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException

try:
    from urllib3.exceptions import HTTPError as Urllib3HTTPError
    from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError
except ImportError:  # pragma: no cover - the module reports missing_required_lib
    Urllib3HTTPError = Exception
    ConnectTimeoutError = MaxRetryError = NewConnectionError = Exception

from urllib.parse import quote, urlencode

REQUEST_TIMEOUT = 60  # seconds, per request, unless the call gives its own
PAGE_SIZE = 500
APPLY_PATCH = 'application/apply-patch+yaml'
MERGE_PATCH = 'application/merge-patch+json'
JSON = 'application/json'


def _root(api_version):
    """Where ``api_version`` is served: ``/api/v1`` for the core group, ``/apis/<group>/<version>`` else."""
    return '/api/v1' if api_version == 'v1' else '/apis/' + api_version


def path(api_version, plural, namespace=None, name=None, subresource=None):
    """The REST path of a collection or an object: ``path('v1', 'namespaces', name='x')`` is
    ``/api/v1/namespaces/x``, ``path('apps/v1', 'deployments', 'ns', 'd')`` is
    ``/apis/apps/v1/namespaces/ns/deployments/d``."""
    parts = [_root(api_version)]
    if namespace:
        parts += ['namespaces', quote(namespace, safe='')]
    parts.append(plural)
    if name:
        parts.append(quote(name, safe=''))
    if subresource:
        parts.append(subresource)
    return '/'.join(parts)


def _query(query):
    """API query parameters, in their API names; None values are left out, booleans are lower case."""
    pairs = []
    for key, value in sorted((query or {}).items()):
        if value is None:
            continue
        if isinstance(value, bool):
            value = 'true' if value else 'false'
        pairs.append((key, value))
    return urlencode(pairs)


MAX_WORKERS = 64


def size_pool(api_client, workers):
    """One connection per worker in the client's urllib3 pool (thread-safe), so concurrent requests do not open
    throwaway connections."""
    try:
        pool = api_client.rest_client.pool_manager
        if pool.connection_pool_kw.get('maxsize', 1) < workers:
            pool.connection_pool_kw['maxsize'] = workers
            pool.clear()
    except AttributeError:  # pragma: no cover - another client layout
        pass


def parallel_map(fn, items, workers):
    """``fn`` over ``items`` on ``workers`` threads, in order: ``[(item, result, exception)]`` (an exception is
    returned, not raised, so a caller knows which items were done)."""
    items = list(items)

    def call(item):
        try:
            return item, fn(item), None
        except Exception as exc:  # pylint: disable=broad-except
            return item, None, exc

    if len(items) <= 1 or workers <= 1:
        return [call(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(call, items))


class Cluster:
    """JSON requests on one ApiClient (see the module doc)."""

    def __init__(self, api_client, timeout=REQUEST_TIMEOUT):
        self.api_client = api_client
        self.timeout = timeout

    @property
    def host(self):
        return self.api_client.configuration.host

    def _headers(self, content_type=None):
        headers = dict(self.api_client.default_headers)
        headers['Accept'] = JSON
        headers['User-Agent'] = self.api_client.user_agent
        if content_type:
            headers['Content-Type'] = content_type
        # The token as the client sends it (a kubeconfig token's refresh hook runs here).
        for setting in (self.api_client.configuration.auth_settings() or {}).values():
            if setting.get('in') == 'header' and setting.get('value'):
                headers[setting['key']] = setting['value']
        return headers

    def request(self, method, api_path, query=None, body=None, content_type=None, timeout=None):
        """One request; returns the decoded JSON body (None for an empty one). Raises ``ApiException`` for a
        status outside 2xx, as the client's typed calls do."""
        url = self.host + api_path
        encoded = _query(query)
        if encoded:
            url += '?' + encoded
        if body is not None and content_type is None:
            content_type = JSON
        response = self.api_client.rest_client.request(
            method, url, headers=self._headers(content_type), body=body,
            _request_timeout=self.timeout if timeout is None else timeout)
        data = getattr(response, 'data', None)
        if data is None and hasattr(response, 'read'):  # kubernetes >= 37 returns the response unread
            response.read()
            data = response.data
        if not 200 <= response.status <= 299:  # kubernetes < 37 raised already
            raise ApiException(http_resp=response)
        if not data:
            return None
        return json.loads(data.decode('utf-8') if isinstance(data, bytes) else data)

    # ------------------------------------------------------------------ reads
    def get(self, api_path, timeout=None, **query):
        """The object at ``api_path``, or None when it does not exist (404)."""
        try:
            return self.request('GET', api_path, query, timeout=timeout)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def pages(self, api_path, timeout=None, **query):
        """The collection at ``api_path`` one page at a time (``limit``, ``continue``): yields each page's items
        and metadata, ``(items, metadata)``, so a caller can work on a page before the next is read."""
        query = dict(query, limit=query.get('limit', PAGE_SIZE))
        while True:
            page = self.request('GET', api_path, query, timeout=timeout) or {}
            meta = page.get('metadata') or {}
            yield page.get('items') or [], meta
            token = meta.get('continue')
            if not token:
                return
            query['continue'] = token

    def list(self, api_path, timeout=None, **query):
        """Every item of the collection at ``api_path``, page after page, and the list's resourceVersion:
        ``(items, resource_version)``."""
        items, meta = [], {}
        for page, meta in self.pages(api_path, timeout=timeout, **query):
            items.extend(page)
        return items, meta.get('resourceVersion')

    def items(self, api_path, timeout=None, **query):
        """``list`` without the resourceVersion."""
        return self.list(api_path, timeout=timeout, **query)[0]

    def served(self, group_version, timeout=None):
        """The resource names (plurals, subresources) that ``group_version`` serves, or None when it is not
        served (404). API discovery, as ``kubectl api-resources`` reads it."""
        found = self.get(_root(group_version), timeout=timeout)
        if found is None:
            return None
        return set(r.get('name') for r in found.get('resources') or [])

    def served_kinds(self, group_version, timeout=None):
        """The kinds of the top-level resources ``group_version`` serves (``{'Job', ...}``), or None when it is not
        served (404): the same discovery read as ``served``, by kind instead of resource name."""
        found = self.get(_root(group_version), timeout=timeout)
        if found is None:
            return None
        return set(r.get('kind') for r in found.get('resources') or [] if '/' not in (r.get('name') or ''))

    def deployment(self, namespace, name, timeout=None):
        """The Deployment ``namespace/name``, or None when it does not exist."""
        return self.get(path('apps/v1', 'deployments', namespace, name), timeout=timeout)

    def extension_running(self, namespace):
        """Whether the AKS managed extension runs in ``namespace``: its ``kueue-extension`` Deployment next to
        Kueue. A 403 (the Deployment may not be read) is no."""
        try:
            return self.deployment(namespace, 'kueue-extension') is not None
        except ApiException as exc:
            if exc.status == 403:
                return False
            raise

    # ----------------------------------------------------------------- writes
    def create(self, api_path, body, timeout=None, **query):
        return self.request('POST', api_path, query, body=body, timeout=timeout)

    def apply(self, api_path, body, field_manager, force=False, dry_run=False, timeout=None, **query):
        """Server-side apply of ``body`` at the object path ``api_path``; returns the object as stored (or as it
        would be, with ``dry_run``)."""
        query = dict(query, fieldManager=field_manager, force=force or None, dryRun='All' if dry_run else None)
        return self.request('PATCH', api_path, query, body=body, content_type=APPLY_PATCH, timeout=timeout)

    def replace(self, api_path, body, timeout=None, **query):
        """PUT ``body`` at the object path ``api_path`` (its ``resourceVersion`` makes it conditional); returns
        the object as stored."""
        return self.request('PUT', api_path, query, body=body, timeout=timeout)

    def patch(self, api_path, body, timeout=None, **query):
        """A JSON merge patch of the object at ``api_path``."""
        return self.request('PATCH', api_path, query, body=body, content_type=MERGE_PATCH, timeout=timeout)

    def delete(self, api_path, timeout=None, **query):
        """Delete the object at ``api_path``; False when it did not exist (404)."""
        try:
            self.request('DELETE', api_path, query, timeout=timeout)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # ------------------------------------------------------------------ watch
    def watch(self, api_path, resource_version, timeout_seconds, **query):
        """The events (``{'type': ..., 'object': {...}}``) of one watch of the collection at ``api_path`` from
        ``resource_version``, until the server ends it (after ``timeout_seconds``) or the caller stops
        iterating. A 410 Gone (the version is too old) is raised as the ApiException it is."""
        query = dict(query, watch=True, resourceVersion=resource_version,
                     timeoutSeconds=max(1, int(timeout_seconds)), allowWatchBookmarks=False)
        url = self.host + api_path + '?' + _query(query)
        # The stream is read as it comes, from the ApiClient's pool manager (same TLS, proxy, headers): the REST
        # clients of kubernetes < 37 and >= 37 ask for an unread response in two different ways.
        response = self.api_client.rest_client.pool_manager.request(
            'GET', url, headers=_with_groups(self._headers(), self.api_client), preload_content=False,
            timeout=timeout_seconds + REQUEST_TIMEOUT)
        ended = False
        try:
            if not 200 <= response.status <= 299:
                response.read()
                raise ApiException(http_resp=_Read(response))
            pending = b''
            for chunk in response.stream(4096):
                pending += chunk
                while b'\n' in pending:
                    line, pending = pending.split(b'\n', 1)
                    if line.strip():
                        event = json.loads(line.decode('utf-8'))
                        if event.get('type') == 'ERROR':
                            status = event.get('object') or {}
                            raise ApiException(status=status.get('code'), reason=status.get('message'))
                        yield event
            ended = True
        finally:
            if not ended:
                response.close()  # left half-read: the connection must not go back to the pool
            response.release_conn()


# The Deployment of the Kueue manager, the chart's and the managed extension's name for it.
MANAGER_DEPLOYMENT = 'kueue-controller-manager'


def manager_container(deployment):
    """The manager container (a dict) of a Kueue controller-manager Deployment: the one named ``manager``, else the
    first; None for no Deployment or no container."""
    spec = (((deployment or {}).get('spec') or {}).get('template') or {}).get('spec') or {}
    containers = spec.get('containers') or []
    chosen = [c for c in containers if c.get('name') == 'manager'] or containers
    return chosen[0] if chosen else None


def _with_groups(headers, api_client):
    """``headers`` with one Impersonate-Group header per impersonated group (kube_client._add_impersonation)."""
    groups = getattr(api_client, 'kueueops_impersonate_groups', None)
    headers.pop('Impersonate-Group', None)
    if not groups:
        return headers
    from urllib3._collections import HTTPHeaderDict  # pylint: disable=import-outside-toplevel

    out = HTTPHeaderDict(headers)
    for group in groups:
        out.add('Impersonate-Group', group)
    return out


class _Read:
    """A read urllib3 response as ``ApiException(http_resp=...)`` expects it."""

    def __init__(self, response):
        self.status = response.status
        self.reason = response.reason
        self.data = response.data

        self.headers = dict(response.headers)

    def getheaders(self):
        return self.headers


def is_unreachable(exc):
    """The request did not get an answer from the API server (connection refused or reset, a
    timeout, a gateway error): a fact about the network, not about the object."""
    if isinstance(exc, ApiException):
        return exc.status in (0, 502, 503, 504) or exc.status is None
    return isinstance(exc, (Urllib3HTTPError, OSError))


def never_sent(exc):
    """No connection could be opened (refused, connect timeout): the request cannot have been written.
    (A connection that broke after the request was sent leaves it unknown.)"""
    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    return isinstance(reason, (NewConnectionError, ConnectTimeoutError, ConnectionRefusedError))
