"""A tiny fake Kubernetes API server on 127.0.0.1, for capturing real kopf output
without a cluster (hack/capture-kopf-logs.sh local).

It serves discovery, lists and watches (held open; MODIFIED events after patches), and
JSON merge patches, with the failures kopf's templates are about:
- `kopfexamples` (kopf.dev/v1): patches to `status` are dropped, as a CRD whose schema
  prunes unknown fields does (kopf logs its patch-inconsistency warning); the first watch
  request answers 429 Too Many Requests with `Retry-After: 1`;
- `beacons` (capture.kopf-audit.dev/v1): served for BEACONS_OK seconds, then every request
  answers 403 (kopf's watcher retries, then fails);
- `events`: every POST answers 403 (kopf logs that it failed to post an event);
- `kopfpeerings`: a peering object `default` with another, higher-priority operator in it
  (kopf pauses); after PEERING_OK seconds every PATCH answers 500 (kopf's peering
  keep-alive fails).

Options for the runs about a fault that has nothing to do with the above (one each):
- `--tls CERT KEY`: serve HTTPS with that certificate (a self-signed one the caller made);
- `--revoke SECONDS`: after SECONDS, the token `token-1` is refused with 401 Unauthorized
  (other tokens, `token-2`..., are accepted), and every open watch-stream ends, so that
  kopf's next request carries the revoked token;
- `--examples N`: serve N kopfexamples (default 1).

Usage: python fake_apiserver.py PORT [BEACONS_OK] [--tls CERT KEY] [--revoke SECONDS]
       [--examples N]   (stops on SIGTERM/SIGINT)
Only aiohttp is needed (it comes with kopf).
"""
import asyncio
import copy
import datetime
import json
import ssl
import sys
import zlib

from aiohttp import web

NS = 'capture'
# Seconds during which the peering object's patches succeed (so that kopf sees the other peer).
PEERING_OK = 2.5
GROUPS = {
    'kopf.dev': [
        ('kopfexamples', 'KopfExample', True),
        ('kopfpeerings', 'KopfPeering', True),
        ('clusterkopfpeerings', 'ClusterKopfPeering', False),
    ],
    'capture.kopf-audit.dev': [('beacons', 'Beacon', True)],
    'apiextensions.k8s.io': [('customresourcedefinitions', 'CustomResourceDefinition', False)],
}
CORE = [('namespaces', 'Namespace', False), ('events', 'Event', True)]
VERBS = ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete']


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class Store:
    def __init__(self, beacons_ok, revoke=None, examples=1):
        self.rv = 10
        self.revoke = revoke
        self.started = asyncio.get_event_loop().time()
        self.beacons_ok = beacons_ok
        self.watchers = {}  # plural -> set of queues
        self.history = []  # (resourceVersion, plural, event): replayed to later watches
        self.watched_429 = False
        self.objects = {
            'kopfexamples': {f'example-{i}': self.obj('kopf.dev/v1', 'KopfExample', f'example-{i}', spec={'field': 'value'})
                             for i in range(1, examples + 1)},
            'beacons': {'beacon-1': self.obj('capture.kopf-audit.dev/v1', 'Beacon', 'beacon-1', spec={})},
            'kopfpeerings': {'default': self.obj('kopf.dev/v1', 'KopfPeering', 'default', status={
                'other-operator@build-host/4711': {'priority': 100, 'lifetime': 600, 'lastseen': now()},
            })},
            'namespaces': {NS: {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {
                'name': NS, 'uid': 'c0ffee00-0000-4000-8000-000000000001', 'resourceVersion': '1'}}},
        }

    def obj(self, api_version, kind, name, spec=None, status=None):
        body = {'apiVersion': api_version, 'kind': kind, 'metadata': {
            'name': name, 'namespace': NS, 'uid': f'c0ffee00-0000-4000-8000-{zlib.crc32(name.encode()):012d}',
            'resourceVersion': '1', 'generation': 1, 'creationTimestamp': now()}}
        if spec is not None:
            body['spec'] = spec
        if status is not None:
            body['status'] = status
        return body

    def elapsed(self):
        return asyncio.get_event_loop().time() - self.started

    def beacons_forbidden(self):
        return self.elapsed() > self.beacons_ok

    def revoked(self):
        return self.revoke is not None and self.elapsed() > self.revoke

    def refuses(self, request):
        """Whether a request's token was revoked (only `token-1` ever is)."""
        return self.revoked() and request.headers.get('Authorization') == 'Bearer token-1'


def status(code, reason, message):
    return web.json_response({'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
                              'message': message, 'reason': reason, 'code': code}, status=code)


def unauthorized():
    return status(401, 'Unauthorized', 'Unauthorized')


def forbidden(verb, plural, group):
    return status(403, 'Forbidden',
                  f'{plural}{"." if group else ""}{group} is forbidden: User "system:serviceaccount:{NS}:operator" cannot {verb} '
                  f'resource "{plural}" in API group "{group}" in the namespace "{NS}"')


def merge(target, patch):
    if not isinstance(patch, dict):
        return patch
    target = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge(target.get(key), value)
    return target


def resource_list(group_version, resources):
    return {'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': group_version, 'resources': [
        {'name': plural, 'singularName': plural[:-1], 'namespaced': namespaced, 'kind': kind, 'verbs': VERBS}
        for plural, kind, namespaced in resources
    ] + [
        {'name': f'{plural}/status', 'singularName': '', 'namespaced': namespaced, 'kind': kind,
         'verbs': ['get', 'patch', 'update']}
        for plural, kind, namespaced in resources if plural == 'kopfexamples'
    ]}


def make_app(store):
    @web.middleware
    async def authenticate(request, handler):
        if store.refuses(request):
            return unauthorized()
        return await handler(request)

    app = web.Application(middlewares=[authenticate])

    async def api(request):
        return web.json_response({'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': []})

    async def api_v1(request):
        return web.json_response(resource_list('v1', CORE))

    async def apis(request):
        return web.json_response({'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [
            {'name': g, 'versions': [{'groupVersion': f'{g}/v1', 'version': 'v1'}],
             'preferredVersion': {'groupVersion': f'{g}/v1', 'version': 'v1'}} for g in GROUPS]})

    async def group_version(request):
        group = request.match_info['group']
        if group not in GROUPS or request.match_info['version'] != 'v1':
            return status(404, 'NotFound', 'the server could not find the requested resource')
        return web.json_response(resource_list(f'{group}/v1', GROUPS[group]))

    async def collection(request):
        plural = request.match_info['plural']
        group = request.match_info.get('group', '')
        if plural == 'beacons' and store.beacons_forbidden():
            return forbidden('watch' if request.query.get('watch') else 'list', plural, group)
        if request.method == 'POST':
            if plural == 'events':
                return forbidden('create', plural, group)
            return status(405, 'MethodNotAllowed', 'not here')
        if request.query.get('watch') in ('true', '1'):
            if plural == 'kopfexamples' and not store.watched_429:
                store.watched_429 = True
                rsp = status(429, 'TooManyRequests', 'Too many requests, please try again later.')
                rsp.headers['Retry-After'] = '1'
                return rsp
            return await watch(request, plural)
        items = list(store.objects.get(plural, {}).values())
        return web.json_response({'apiVersion': 'v1', 'kind': 'List', 'items': items,
                                  'metadata': {'resourceVersion': str(store.rv)}})

    async def watch(request, plural):
        rsp = web.StreamResponse(headers={'Content-Type': 'application/json'})
        await rsp.prepare(request)
        queue = asyncio.Queue()
        since = int(request.query.get('resourceVersion') or 0)
        for rv, what, event in store.history:
            if what == plural and rv > since:
                queue.put_nowait(event)
        store.watchers.setdefault(plural, set()).add(queue)
        try:
            while True:
                if plural == 'beacons':
                    # The watch-stream ends when beacons become forbidden: kopf lists again.
                    left = store.beacons_ok - (asyncio.get_event_loop().time() - store.started)
                    if left <= 0:
                        break
                    try:
                        event = await asyncio.wait_for(queue.get(), timeout=left)
                    except asyncio.TimeoutError:
                        break
                elif store.revoke is not None:
                    # A revoking run ends every watch-stream when the token is revoked.
                    left = store.revoke - store.elapsed()
                    if left <= 0:
                        break
                    try:
                        event = await asyncio.wait_for(queue.get(), timeout=left)
                    except asyncio.TimeoutError:
                        break
                else:
                    event = await queue.get()
                await rsp.write(json.dumps(event).encode() + b'\n')
        finally:
            store.watchers[plural].discard(queue)
        return rsp

    async def item(request):
        plural = request.match_info['plural']
        group = request.match_info.get('group', '')
        name = request.match_info['name']
        if plural == 'beacons' and store.beacons_forbidden():
            return forbidden('patch', plural, group)
        if plural == 'kopfpeerings' and request.method == 'PATCH' and store.elapsed() > PEERING_OK:
            return status(500, 'InternalError', 'etcdserver: request timed out')
        obj = store.objects.get(plural, {}).get(name)
        if obj is None:
            return status(404, 'NotFound', f'{plural}.{group} "{name}" not found')
        if request.method == 'GET':
            return web.json_response(obj)
        if request.method != 'PATCH':
            return status(405, 'MethodNotAllowed', 'not here')
        patch = await request.json()
        if plural == 'kopfexamples' and isinstance(patch, dict):
            # A pruning schema: status fields are dropped silently.
            patch = {k: v for k, v in patch.items() if k != 'status'}
        new = merge(copy.deepcopy(obj), patch) if isinstance(patch, dict) else obj
        store.rv += 1
        new['metadata']['resourceVersion'] = str(store.rv)
        store.objects[plural][name] = new
        event = {'type': 'MODIFIED', 'object': copy.deepcopy(new)}
        store.history.append((store.rv, plural, event))
        for queue in store.watchers.get(plural, ()):
            queue.put_nowait(event)
        return web.json_response(new)

    app.router.add_get('/api', api)
    app.router.add_get('/api/v1', api_v1)
    app.router.add_get('/apis', apis)
    app.router.add_get('/apis/{group}/{version}', group_version)
    for prefix in ('/api/v1', '/apis/{group}/v1'):
        for ns in ('', '/namespaces/{ns}'):
            app.router.add_route('*', f'{prefix}{ns}/{{plural}}', collection)
            app.router.add_route('*', f'{prefix}{ns}/{{plural}}/{{name}}', item)
            app.router.add_route('*', f'{prefix}{ns}/{{plural}}/{{name}}/status', item)
    return app


def options(argv):
    """PORT [BEACONS_OK] [--tls CERT KEY] [--revoke SECONDS] [--examples N]."""
    port, rest = int(argv[0]), list(argv[1:])
    beacons_ok = float(rest.pop(0)) if rest and not rest[0].startswith('--') else 8.0
    tls, revoke, examples = None, None, 1
    while rest:
        flag = rest.pop(0)
        if flag == '--tls':
            tls = (rest.pop(0), rest.pop(0))
        elif flag == '--revoke':
            revoke = float(rest.pop(0))
        elif flag == '--examples':
            examples = int(rest.pop(0))
        else:
            raise SystemExit(f'unknown option {flag}')
    return port, beacons_ok, tls, revoke, examples


async def main():
    port, beacons_ok, tls, revoke, examples = options(sys.argv[1:])
    store = Store(beacons_ok=beacons_ok, revoke=revoke, examples=examples)
    context = None
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*tls)
    runner = web.AppRunner(make_app(store), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, '127.0.0.1', port, ssl_context=context).start()
    print(f'fake apiserver on 127.0.0.1:{port}', file=sys.stderr, flush=True)
    await asyncio.Event().wait()


if __name__ == '__main__':
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
