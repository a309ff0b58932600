"""A small Kubernetes API client for the scale bench: the standard library only.

The admin kubeconfig that hack/cluster.sh writes names its certificate files by path;
`Kube` keeps one keep-alive HTTPS connection per thread, retries what the API server
asks to retry (429, 5xx, dropped connections), and runs many requests concurrently
with `parallel` (a fixed pool of threads, so the load on the API server is bounded).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import queue
import ssl
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator


class ApiError(Exception):
    def __init__(self, status: int, body: str, what: str) -> None:
        super().__init__(f'{what}: HTTP {status}: {body[:300]}')
        self.status = status
        self.body = body


def _load_yaml_kubeconfig(path: str) -> dict[str, Any]:
    """kwokctl writes a simple block-style kubeconfig; JSON is accepted too."""
    text = open(path).read()
    if text.lstrip().startswith('{'):
        return json.loads(text)
    try:
        import yaml  # type: ignore
        return yaml.safe_load(text)
    except ImportError:
        pass
    # A minimal reader for the kubeconfig kwokctl writes (two-space indentation).
    out: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        for key in ('certificate-authority:', 'certificate-authority-data:', 'server:',
                    'client-certificate:', 'client-certificate-data:', 'client-key:',
                    'client-key-data:', 'token:'):
            if s.startswith(key) or s.startswith('- ' + key):
                out.setdefault(key[:-1], s.split(':', 1)[1].strip())
    return {'clusters': [{'cluster': {k: v for k, v in out.items()
                                      if k in ('server', 'certificate-authority', 'certificate-authority-data')}}],
            'users': [{'user': {k: v for k, v in out.items()
                                if k.startswith('client-') or k == 'token'}}]}


class Kube:
    def __init__(self, kubeconfig: str) -> None:
        cfg = _load_yaml_kubeconfig(kubeconfig)
        cluster = cfg['clusters'][0]['cluster']
        user = cfg['users'][0]['user']
        u = urllib.parse.urlsplit(cluster['server'])
        self.host, self.port = u.hostname or '127.0.0.1', u.port or 443
        self.server = cluster['server']
        self._tmp: list[str] = []
        ctx = ssl.create_default_context(cafile=self._file(cluster, 'certificate-authority'))
        cert = self._file(user, 'client-certificate')
        key = self._file(user, 'client-key')
        if cert and key:
            ctx.load_cert_chain(cert, key)
        self.token = user.get('token')
        self.ctx = ctx
        self._local = threading.local()
        self.requests = 0
        self._count_lock = threading.Lock()

    def _file(self, section: dict[str, Any], key: str) -> str | None:
        if section.get(key):
            return section[key]
        data = section.get(key + '-data')
        if not data:
            return None
        fd, path = tempfile.mkstemp(prefix='bench-kube-')
        os.write(fd, base64.b64decode(data))
        os.close(fd)
        self._tmp.append(path)
        return path

    def _conn(self, fresh: bool = False) -> http.client.HTTPSConnection:
        c = getattr(self._local, 'conn', None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
            self._local.conn = c
        return c

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = 'application/json',
                ok: Iterable[int] = (), retries: int = 8, raw: bool = False,
                accept: str = 'application/json') -> Any:
        """Returns the decoded JSON body (or text with raw=True); raises ApiError unless the
        status is 2xx or in `ok` (then None is returned)."""
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        if isinstance(data, str):
            data = data.encode()
        headers = {'Accept': accept}
        if data is not None:
            headers['Content-Type'] = content_type
        if self.token:
            headers['Authorization'] = f'Bearer {self.token}'
        delay = 0.2
        for attempt in range(retries + 1):
            try:
                c = self._conn(fresh=attempt > 0 and getattr(self._local, 'broken', False))
                self._local.broken = False
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                text = r.read()
            except (http.client.HTTPException, OSError) as e:
                self._local.broken = True
                if attempt == retries:
                    raise ApiError(0, str(e), f'{method} {path}')
                time.sleep(delay)
                delay = min(delay * 2, 5)
                continue
            with self._count_lock:
                self.requests += 1
            if 200 <= r.status < 300:
                if raw:
                    return text.decode('utf-8', 'replace')
                return json.loads(text) if text else None
            if r.status in ok:
                return None
            if r.status in (429, 500, 502, 503, 504) and attempt < retries:
                retry_after = r.getheader('Retry-After')
                time.sleep(float(retry_after) if retry_after and retry_after.isdigit() else delay)
                delay = min(delay * 2, 5)
                continue
            raise ApiError(r.status, text.decode('utf-8', 'replace'), f'{method} {path}')
        raise AssertionError('unreachable')

    def get(self, path: str, **kw: Any) -> Any:
        return self.request('GET', path, **kw)

    def create(self, path: str, body: Any) -> Any:
        """POST; an object that already exists is left as it is (409 tolerated)."""
        return self.request('POST', path, body, ok=(409,))

    def patch(self, path: str, body: Any, kind: str = 'merge') -> Any:
        ct = {'merge': 'application/merge-patch+json', 'strategic': 'application/strategic-merge-patch+json',
              'json': 'application/json-patch+json'}[kind]
        return self.request('PATCH', path, body, content_type=ct)

    def delete(self, path: str) -> Any:
        return self.request('DELETE', path, ok=(404,))

    def list(self, path: str, limit: int = 500, params: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a (paginated) list."""
        cont = ''
        while True:
            q = dict(params or {})
            q['limit'] = str(limit)
            if cont:
                q['continue'] = cont
            page = self.get(f'{path}?{urllib.parse.urlencode(q)}')
            yield from page.get('items') or []
            cont = (page.get('metadata') or {}).get('continue') or ''
            if not cont:
                return

    def list_rv(self, path: str, params: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], str]:
        """All items and the list's resourceVersion (to start a watch from)."""
        items: list[dict[str, Any]] = []
        cont, rv = '', ''
        while True:
            q = dict(params or {})
            q['limit'] = '500'
            if cont:
                q['continue'] = cont
            page = self.get(f'{path}?{urllib.parse.urlencode(q)}')
            items += page.get('items') or []
            rv = rv or page['metadata'].get('resourceVersion', '')
            cont = page['metadata'].get('continue') or ''
            if not cont:
                return items, rv

    def watch(self, path: str, resource_version: str, stop: threading.Event,
              timeout: int = 600) -> Iterator[dict[str, Any]]:
        """Watch events (dicts with type and object) until `stop` is set; reconnects from
        the last resourceVersion seen; yields {'type': 'RELIST'} when it had to relist."""
        rv = resource_version
        while not stop.is_set():
            q = {'watch': '1', 'allowWatchBookmarks': 'true', 'resourceVersion': rv,
                 'timeoutSeconds': str(timeout)}
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=150)
            try:
                headers = {'Accept': 'application/json'}
                if self.token:
                    headers['Authorization'] = f'Bearer {self.token}'
                conn.request('GET', f'{path}?{urllib.parse.urlencode(q)}', headers=headers)
                r = conn.getresponse()
                if r.status == 410:
                    yield {'type': 'RELIST'}
                    return
                if r.status != 200:
                    time.sleep(1)
                    continue
                while not stop.is_set():
                    line = r.readline()  # bookmarks come every minute: a timeout reconnects
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev.get('type') == 'ERROR':
                        yield {'type': 'RELIST'}
                        return
                    obj = ev.get('object') or {}
                    rv = (obj.get('metadata') or {}).get('resourceVersion', rv)
                    if ev.get('type') != 'BOOKMARK':
                        yield ev
            except (http.client.HTTPException, OSError):
                time.sleep(0.5)
            finally:
                conn.close()


def parallel(fn: Callable[[Any], Any], items: list[Any], workers: int = 8, what: str = '',
             progress_every: float = 10.0, log: Callable[[str], None] | None = None) -> list[Any]:
    """Runs fn over items with `workers` threads; prints progress every few seconds.
    Exceptions are collected and the first few re-raised at the end."""
    results: list[Any] = [None] * len(items)
    errors: list[str] = []
    q: queue.Queue[int] = queue.Queue()
    for i in range(len(items)):
        q.put(i)
    done = [0]
    lock = threading.Lock()
    start = time.monotonic()

    def work() -> None:
        while True:
            try:
                i = q.get_nowait()
            except queue.Empty:
                return
            try:
                results[i] = fn(items[i])
            except Exception as e:  # noqa: BLE001 (reported below)
                with lock:
                    errors.append(f'{type(e).__name__}: {e}')
            with lock:
                done[0] += 1

    with ThreadPoolExecutor(max_workers=workers) as ex:
        futs = [ex.submit(work) for _ in range(workers)]
        last = time.monotonic()
        while not all(f.done() for f in futs):
            time.sleep(0.2)
            if log and what and time.monotonic() - last >= progress_every:
                last = time.monotonic()
                el = last - start
                log(f'{what}: {done[0]}/{len(items)} ({done[0] / el:.0f}/s)')
    if log and what:
        el = time.monotonic() - start
        log(f'{what}: {len(items)} in {el:.1f}s ({len(items) / max(el, 1e-3):.0f}/s)'
            + (f', {len(errors)} errors' if errors else ''))
    if errors:
        raise RuntimeError(f'{len(errors)} of {len(items)} failed; first: ' + ' | '.join(errors[:3]))
    return results


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
