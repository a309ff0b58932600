#!/usr/bin/env python3
"""Runs a kopf operator fixture against the local test cluster (hack/cluster.sh).

    python hack/fixture.py run --kubeconfig ADMIN_KUBECONFIG --fixture NAME --namespace NS \
        [--log-format full|plain|json] [--workdir DIR] [--echo] [--exit-reason OOMKilled]

      1. applies tests/fixtures/kopf/NAME/manifests.yaml, `${NAMESPACE}` replaced by NS
         (CRDs first, waited for Established; custom resources last);
      2. waits until the Deployment's pods are scheduled to the kwok node and Running;
      3. mints a TokenRequest token (24h) for the pods' ServiceAccount and writes a
         kubeconfig for it whose context namespace is NS;
      4. runs, per pod, the kopf container's command+args as a LOCAL process (`kopf` and
         `python` mapped to the venv this script runs in, `/app/` to the fixture directory,
         env from the container, `--liveness` remapped to a free 127.0.0.1 port,
         `--log-format` overridden when given, KUBECONFIG = the token kubeconfig);
      5. writes its stdout/stderr line by line in CRI format to
         WORKDIR/pod-logs/NS/POD/CONTAINER/<restart>.log and points a kwok `Logs` object
         (same name/namespace as the pod) at it, so `GET pods/POD/log` serves it, and
         `?previous=true` the previous run's file;
      6. restarts the process when it exits, like a kubelet (back-off 1s, 2s, 4s ... 30s),
         patching pods/status: restartCount, lastState.terminated (exitCode, reason Error,
         or OOMKilled with --exit-reason/expect.yaml `harness.exitReason`), state waiting
         CrashLoopBackOff while backing off, running again after;
      7. prints `FIXTURE POD pod=P log=F` per pod, then `FIXTURE READY pod=P log=F` (first
         pod) on stdout, and supervises until SIGTERM/SIGINT: then it stops kopf (SIGTERM,
         SIGKILL after 5s) and exits 0. Children die with it (PR_SET_PDEATHSIG).

    python hack/fixture.py set-state --kubeconfig K --namespace NS --pod POD
        [--container C] (--oom | --crashloop | --running) [--restart-count N]
      sets a container's state in pods/status, as a kubelet would report it.

Progress goes to stderr. Only the standard library and PyYAML (a kopf dependency) are
used; the API is reached with the kubectl built by hack/build-cluster-binaries.sh.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any


def _ensure_venv() -> None:
    """Re-executes under the kopf venv (hack/kopf-venv.sh) when started by another Python."""
    import importlib.util
    if importlib.util.find_spec('kopf') and importlib.util.find_spec('yaml'):
        return
    if os.environ.get('KOPF_AUDIT_FIXTURE_REEXEC'):
        sys.exit('fixture.py: kopf/PyYAML missing even in the kopf venv')
    script = Path(__file__).resolve().parent / 'kopf-venv.sh'
    res = subprocess.run([str(script)], stdout=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit('fixture.py: hack/kopf-venv.sh failed')
    python = str(Path(res.stdout.strip().splitlines()[-1]) / 'bin' / 'python')
    os.environ['KOPF_AUDIT_FIXTURE_REEXEC'] = '1'
    os.execv(python, [python, str(Path(__file__).resolve()), *sys.argv[1:]])


_ensure_venv()

import yaml  # noqa: E402  (after the venv check)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / 'tests' / 'fixtures' / 'kopf'
BIN_DIR_NAME = 'bin-k8s-v1.37.2-kwok-v0.8.0'
KWOK_NODE = 'kwok-node-0'
BACKOFF_CAP = 30.0
BACKOFF_RESET_AFTER = 600.0  # a run this long resets the back-off, as in the kubelet
STOP_GRACE = 5.0


def log(msg: str) -> None:
    print(f"[fixture {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class FixtureError(Exception):
    pass


def rfc3339nano(ns: int | None = None) -> str:
    ns = time.time_ns() if ns is None else ns
    s, frac = divmod(ns, 1_000_000_000)
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(s)) + f'.{frac:09d}Z'


def rfc3339(ns: int | None = None) -> str:
    ns = time.time_ns() if ns is None else ns
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(ns // 1_000_000_000))


def default_workdir() -> Path:
    return Path(os.environ.get('KOPF_AUDIT_WORKDIR') or (REPO / '.e2e')).resolve()


def find_kubectl(workdir: Path) -> str:
    cache = Path(os.environ.get('KOPF_AUDIT_CACHE')
                 or Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') / 'kopf-audit')
    candidates = [os.environ.get('KOPF_AUDIT_KUBECTL'), workdir / 'bin' / 'kubectl',
                  cache / BIN_DIR_NAME / 'kubectl', shutil.which('kubectl')]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return str(c)
    raise FixtureError('kubectl not found: run hack/cluster.sh up (or set KOPF_AUDIT_KUBECTL)')


# How long kubectl calls are retried while the API server does not answer.
TRANSIENT_RETRY_FOR = 180.0

# What kubectl prints when the API server is paused, restarting or overloaded.
TRANSIENT_ERRORS = ('TLS handshake timeout', 'connection refused', 'Unable to connect to the server',
                    'i/o timeout', 'context deadline exceeded', 'the server is currently unable',
                    'ServiceUnavailable', 'Too many requests', 'connection reset by peer',
                    'http2: client connection lost', 'EOF')


def is_transient(stderr: str) -> bool:
    return any(e in stderr for e in TRANSIENT_ERRORS)


class Kube:
    """kubectl as the cluster admin."""

    def __init__(self, kubeconfig: str, kubectl: str) -> None:
        self.kubeconfig = kubeconfig
        self.kubectl = kubectl
        # kubectl's discovery cache next to the kubeconfig, not in ~/.kube/cache.
        os.environ.setdefault('KUBECACHEDIR', str(Path(kubeconfig).parent / 'kube-cache'))

    def run(self, *args: str, input: str | None = None, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Runs kubectl; retries for up to TRANSIENT_RETRY_FOR seconds while the API server
        does not answer (paused, restarting, overloaded), so fault tests can run."""
        cmd = [self.kubectl, '--kubeconfig', self.kubeconfig, *args]
        deadline = time.monotonic() + TRANSIENT_RETRY_FOR
        delay = 1.0
        while True:
            try:
                res = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
                transient = res.returncode != 0 and is_transient(res.stderr)
                failure = res.stderr.strip() or res.stdout.strip()
            except subprocess.TimeoutExpired:
                res, transient, failure = None, True, f'timed out after {timeout}s'
            if not transient or time.monotonic() + delay > deadline:
                break
            log(f"kubectl {args[0] if args else ''}: the API server did not answer ({failure[:120]}); retrying in {delay:.0f}s")
            time.sleep(delay)
            delay = min(delay * 2, 15.0)
        if res is None:
            raise FixtureError(f"kubectl {' '.join(args)}: {failure}")
        if check and res.returncode != 0:
            raise FixtureError(f"kubectl {' '.join(args)}: {failure}")
        return res

    def json(self, *args: str, timeout: float = 60) -> Any:
        return json.loads(self.run(*args, '-o', 'json', timeout=timeout).stdout)

    def apply(self, docs: list[dict[str, Any]], namespace: str | None = None) -> None:
        if not docs:
            return
        args = ['apply', '--server-side', '--force-conflicts', '--field-manager=kopf-audit-fixture', '-f', '-']
        if namespace:
            args[1:1] = ['-n', namespace]
        text = yaml.safe_dump_all(docs, sort_keys=False)
        for attempt in range(5):
            res = self.run(*args, input=text, check=False)
            if res.returncode == 0:
                return
            err = res.stderr.strip()
            if attempt < 4 and ('conflict' in err.lower() or 'try again' in err.lower()
                                or 'the object has been modified' in err):
                time.sleep(0.5 + attempt)
                continue
            raise FixtureError(f'kubectl apply failed: {err}')

    def patch_status(self, namespace: str, pod: str, patch: dict[str, Any]) -> None:
        self.run('-n', namespace, 'patch', 'pod', pod, '--subresource=status', '--type=strategic',
                 '-p', json.dumps(patch))


# ---------------------------------------------------------------- manifests

def load_manifests(fixture_dir: Path, namespace: str) -> list[dict[str, Any]]:
    path = fixture_dir / 'manifests.yaml'
    if not path.exists():
        raise FixtureError(f'{path} not found')
    text = path.read_text().replace('${NAMESPACE}', namespace)
    return [d for d in yaml.safe_load_all(text) if d]


def load_expect(fixture_dir: Path) -> dict[str, Any]:
    path = fixture_dir / 'expect.yaml'
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def group_of(api_version: str) -> str:
    return api_version.rsplit('/', 1)[0] if '/' in api_version else ''


def wait_established(kube: Kube, names: list[str], within: float = 60) -> None:
    """Waits until every CRD is Established. Not `kubectl wait --for=condition=...`: on a
    CRD just created, whose status.conditions is still null, it fails at once
    (".status.conditions accessor error: <nil> is of the type <nil>") instead of waiting."""
    deadline = time.monotonic() + within
    pending = list(names)
    while pending:
        pending = [n for n in pending if kube.run(
            'get', n, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}',
            check=False).stdout.strip() != 'True']
        if not pending:
            return
        if time.monotonic() > deadline:
            raise FixtureError(f"CRDs not Established after {within:.0f}s: {', '.join(pending)}")
        time.sleep(0.5)


def apply_manifests(kube: Kube, docs: list[dict[str, Any]], namespace: str) -> None:
    ns_res = kube.run('get', 'namespace', namespace, check=False)
    if ns_res.returncode != 0:
        res = kube.run('create', 'namespace', namespace, check=False)
        if res.returncode != 0 and 'AlreadyExists' not in res.stderr:
            raise FixtureError(f'cannot create namespace {namespace}: {res.stderr.strip()}')
        log(f'created namespace {namespace}')
    crds = [d for d in docs if d.get('kind') == 'CustomResourceDefinition']
    custom_groups = {c['spec']['group'] for c in crds}
    customs = [d for d in docs if d.get('kind') != 'CustomResourceDefinition'
               and group_of(d.get('apiVersion', '')) in custom_groups]
    others = [d for d in docs if d not in crds and d not in customs]
    if crds:
        kube.apply(crds)
        names = [f"crd/{c['metadata']['name']}" for c in crds]
        wait_established(kube, names)
        log(f"CRDs established: {', '.join(n[4:] for n in names)}")
    kube.apply(others, namespace)
    log(f"applied {', '.join(d['kind'] + '/' + d['metadata']['name'] for d in others)}")
    if customs:
        # The API server's discovery may lag a freshly established CRD: retry briefly.
        deadline = time.monotonic() + 30
        while True:
            try:
                kube.apply(customs, namespace)
                break
            except FixtureError as e:
                if time.monotonic() > deadline or 'no matches for kind' not in str(e) and \
                        'the server could not find the requested resource' not in str(e):
                    raise
                time.sleep(1)
        log(f"applied {', '.join(d['kind'] + '/' + d['metadata']['name'] for d in customs)}")


# ---------------------------------------------------------------- pods

def selector_string(deploy: dict[str, Any]) -> str:
    sel = deploy['spec']['selector']
    parts = [f'{k}={v}' for k, v in (sel.get('matchLabels') or {}).items()]
    for expr in sel.get('matchExpressions') or []:
        op, key, vals = expr['operator'], expr['key'], expr.get('values') or []
        if op == 'In':
            parts.append(f"{key} in ({','.join(vals)})")
        elif op == 'NotIn':
            parts.append(f"{key} notin ({','.join(vals)})")
        elif op == 'Exists':
            parts.append(key)
        elif op == 'DoesNotExist':
            parts.append(f'!{key}')
    return ','.join(parts)


def wait_for_pods(kube: Kube, namespace: str, deploy: dict[str, Any], timeout: float = 120) -> list[dict[str, Any]]:
    name = deploy['metadata']['name']
    replicas = deploy['spec'].get('replicas', 1)
    sel = selector_string(deploy)
    deadline = time.monotonic() + timeout
    last = ''
    while True:
        pods = kube.json('-n', namespace, 'get', 'pods', '-l', sel)['items']
        pods = [p for p in pods if not p['metadata'].get('deletionTimestamp')]
        running = [p for p in pods if p['spec'].get('nodeName') and p['status'].get('phase') == 'Running']
        if len(running) >= replicas:
            running.sort(key=lambda p: p['metadata']['name'])
            log(f"deployment {name}: {len(running)} pod(s) Running on "
                f"{', '.join(sorted({p['spec']['nodeName'] for p in running}))}")
            return running[:replicas]
        last = ', '.join(f"{p['metadata']['name']}={p['status'].get('phase')}"
                         f"@{p['spec'].get('nodeName') or 'unscheduled'}" for p in pods) or 'no pods'
        if time.monotonic() > deadline:
            events = kube.run('-n', namespace, 'get', 'events', '--sort-by=.lastTimestamp', check=False).stdout
            raise FixtureError(f'deployment {name}: {replicas} Running pod(s) not seen after {timeout:.0f}s '
                               f'({last}); events:\n{events[-2000:]}')
        time.sleep(1)


def kopf_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    containers = pod_spec['containers']
    for c in containers:
        words = [os.path.basename(w) for w in (c.get('command') or []) + (c.get('args') or [])]
        if 'kopf' in words:
            return c
    return containers[0]


def write_token_kubeconfig(kube: Kube, namespace: str, sa: str, path: Path) -> None:
    token = kube.run('-n', namespace, 'create', 'token', sa, '--duration=24h').stdout.strip()
    admin = json.loads(kube.run('config', 'view', '--minify', '--raw', '-o', 'json').stdout)
    cluster = dict(admin['clusters'][0]['cluster'])
    user = f'system:serviceaccount:{namespace}:{sa}'
    config = {
        'apiVersion': 'v1', 'kind': 'Config',
        'clusters': [{'name': 'kopf-audit', 'cluster': cluster}],
        'users': [{'name': user, 'user': {'token': token}}],
        'contexts': [{'name': user, 'context': {'cluster': 'kopf-audit', 'user': user, 'namespace': namespace}}],
        'current-context': user,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        yaml.safe_dump(config, f, sort_keys=False)


# ---------------------------------------------------------------- command line of the container

_VAR_REF = re.compile(r'\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)')


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: unknown references stay as they are, $$ escapes."""
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == '$$':
            return '$'
        return env.get(m.group(1), m.group(0))
    return _VAR_REF.sub(sub, value)


def container_env(kube: Kube, namespace: str, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    fields = {
        'metadata.name': pod['metadata']['name'],
        'metadata.namespace': namespace,
        'metadata.uid': pod['metadata'].get('uid', ''),
        'spec.nodeName': pod['spec'].get('nodeName', ''),
        'spec.serviceAccountName': pod['spec'].get('serviceAccountName') or 'default',
        'status.podIP': pod['status'].get('podIP', ''),
        'status.hostIP': pod['status'].get('hostIP', ''),
    }
    env: dict[str, str] = {}
    for src in container.get('envFrom') or []:
        prefix = src.get('prefix', '')
        for kind, key in (('configmap', 'configMapRef'), ('secret', 'secretRef')):
            if key in src:
                obj = kube.json('-n', namespace, 'get', kind, src[key]['name'])
                data = obj.get('data') or {}
                if kind == 'secret':
                    import base64
                    data = {k: base64.b64decode(v).decode() for k, v in data.items()}
                env.update({prefix + k: v for k, v in data.items()})
    for item in container.get('env') or []:
        name = item['name']
        if 'value' in item:
            env[name] = expand(str(item['value']), env)
        elif 'valueFrom' in item:
            vf = item['valueFrom']
            if 'fieldRef' in vf:
                path = vf['fieldRef']['fieldPath']
                m = re.match(r"metadata\.(labels|annotations)\['(.+)'\]", path)
                if m:
                    env[name] = (pod['metadata'].get(m.group(1)) or {}).get(m.group(2), '')
                else:
                    env[name] = fields.get(path, '')
            elif 'configMapKeyRef' in vf or 'secretKeyRef' in vf:
                ref = vf.get('configMapKeyRef') or vf['secretKeyRef']
                kind = 'configmap' if 'configMapKeyRef' in vf else 'secret'
                res = kube.run('-n', namespace, 'get', kind, ref['name'], '-o',
                               f"jsonpath={{.data.{ref['key']}}}", check=False)
                val = res.stdout if res.returncode == 0 else ''
                if kind == 'secret' and val:
                    import base64
                    val = base64.b64decode(val).decode()
                env[name] = val
            elif 'resourceFieldRef' in vf:
                res_name = vf['resourceFieldRef']['resource']  # e.g. limits.memory
                section, _, rname = res_name.partition('.')
                env[name] = str(((container.get('resources') or {}).get(section) or {}).get(rname, ''))
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def remap_url(url: str, port: int) -> str:
    u = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((u.scheme or 'http', f'127.0.0.1:{port}', u.path, u.query, u.fragment))


def kopf_venv_bin(version: str | None) -> Path:
    """The bin directory of the venv with kopf VERSION (hack/kopf-venv.sh VERSION), or this one."""
    if not version:
        return Path(sys.executable).parent
    script = Path(__file__).resolve().parent / 'kopf-venv.sh'
    res = subprocess.run([str(script), version], stdout=subprocess.PIPE, text=True)
    if res.returncode != 0:
        raise FixtureError(f'hack/kopf-venv.sh {version} failed')
    return Path(res.stdout.strip().splitlines()[-1]) / 'bin'


def image_config(fixture_dir: Path, image: str | None) -> dict[str, list[str]]:
    """The ENTRYPOINT and CMD the fixture's image.yaml gives an image, as an OCI image
    config has them: what a container runs when the Deployment sets no command."""
    path = fixture_dir / 'image.yaml'
    if not image or not path.exists():
        return {}
    images = (yaml.safe_load(path.read_text()) or {}).get('images') or {}
    config = images.get(image) or {}
    return {'entrypoint': list(config.get('entrypoint') or []), 'cmd': list(config.get('cmd') or [])}


def container_words(container: dict[str, Any], fixture_dir: Path) -> list[str]:
    """What the kubelet runs: `command` replaces the image's ENTRYPOINT (and drops its
    CMD), `args` replace its CMD."""
    image = image_config(fixture_dir, container.get('image'))
    command = container.get('command')
    args = container.get('args')
    if command is not None:
        return list(command) + list(args or [])
    return image.get('entrypoint', []) + (list(args) if args is not None else image.get('cmd', []))


def write_out_command(docs: list[dict[str, Any]], fixture_dir: Path) -> None:
    """Writes the image's ENTRYPOINT and CMD into the Deployment's containers that set
    no command: the same operator, with its command line visible."""
    for doc in docs:
        if doc.get('kind') != 'Deployment':
            continue
        for c in doc['spec']['template']['spec']['containers']:
            if c.get('command') is None:
                words = container_words(c, fixture_dir)
                if words:
                    c['command'] = words
                    c.pop('args', None)


def local_argv(container: dict[str, Any], env: dict[str, str], fixture_dir: Path,
               log_format: str | None, venv_bin: Path) -> tuple[list[str], dict[str, str], list[str]]:
    """The container's command line as a local process: returns argv, extra env, notes."""
    argv = [expand(a, env) for a in container_words(container, fixture_dir)]
    if not argv:
        raise FixtureError(f"container {container['name']}: no command/args, and no image.yaml entry for {container.get('image')!r}")
    notes: list[str] = []

    def map_path(a: str) -> str:
        for prefix in ('/app/',):
            if a.startswith(prefix):
                return str(fixture_dir / a[len(prefix):])
        return str(fixture_dir) if a == '/app' else a

    exe = os.path.basename(argv[0])
    if exe == 'kopf':
        argv[0] = str(venv_bin / 'kopf')
    elif re.fullmatch(r'python(3(\.\d+)?)?', exe):
        argv[0] = str(venv_bin / 'python')
    elif argv[0] in ('sh', 'bash', '/bin/sh', '/bin/bash'):
        pass
    else:
        raise FixtureError(f'container {container["name"]}: cannot run {argv[0]!r} locally (only kopf/python)')
    argv = [argv[0]] + [map_path(a) for a in argv[1:]]

    # Ports the operator opens: a free loopback port per process.
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith('--liveness='):
            port = free_port()
            out.append('--liveness=' + remap_url(a.split('=', 1)[1], port))
            notes.append(f'--liveness port remapped to 127.0.0.1:{port}')
        elif a in ('--liveness', '-L') and i + 1 < len(argv):
            port = free_port()
            out += [a, remap_url(argv[i + 1], port)]
            notes.append(f'{a} port remapped to 127.0.0.1:{port}')
            i += 1
        elif log_format and (a.startswith('--log-format=')):
            pass
        elif log_format and a == '--log-format' and i + 1 < len(argv):
            i += 1
        else:
            out.append(a)
        i += 1
    argv = out
    extra_env: dict[str, str] = {}
    if 'KOPF_RUN_LIVENESS' in env:
        port = free_port()
        extra_env['KOPF_RUN_LIVENESS'] = remap_url(env['KOPF_RUN_LIVENESS'], port)
        notes.append(f'KOPF_RUN_LIVENESS port remapped to 127.0.0.1:{port}')
    if log_format:
        if 'run' not in argv:
            raise FixtureError('--log-format given but the command has no `run` subcommand')
        argv.insert(argv.index('run') + 1, f'--log-format={log_format}')
        extra_env['KOPF_RUN_LOG_FORMAT'] = log_format
    return argv, extra_env, notes


def set_container_status(kube: Kube, namespace: str, pod_name: str, cname: str, *, state: dict[str, Any],
                         last: dict[str, Any] | None, restarts: int, ready: bool) -> None:
    """Patches one container's status as a kubelet reports it. containerStatuses is an atomic
    list, so the whole list is sent back with this container's entry replaced."""
    pod = kube.json('-n', namespace, 'get', 'pod', pod_name)
    statuses = pod['status'].get('containerStatuses') or []
    image = next((c.get('image', '') for c in pod['spec']['containers'] if c['name'] == cname), '')
    entry = next((dict(c) for c in statuses if c['name'] == cname), {'name': cname, 'image': image, 'imageID': ''})
    entry.update({'state': state, 'ready': ready, 'started': 'running' in state, 'restartCount': restarts})
    if last:
        entry['lastState'] = last
    new = [entry if c['name'] == cname else c for c in statuses]
    if not any(c['name'] == cname for c in statuses):
        new.append(entry)
    all_ready = all(c.get('ready') for c in new)
    cond = 'True' if all_ready else 'False'
    now = rfc3339()
    unready = [c['name'] for c in new if not c.get('ready')]
    conditions = []
    for ctype in ('Ready', 'ContainersReady'):
        c: dict[str, Any] = {'type': ctype, 'status': cond, 'lastTransitionTime': now}
        if all_ready:
            c.update({'reason': None, 'message': None})
        else:
            c.update({'reason': 'ContainersNotReady',
                      'message': f"containers with unready status: [{' '.join(unready)}]"})
        conditions.append(c)
    kube.patch_status(namespace, pod_name, {'status': {'containerStatuses': new, 'conditions': conditions}})


# ---------------------------------------------------------------- supervision

def _set_pdeathsig() -> None:
    try:
        libc = ctypes.CDLL('libc.so.6', use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the supervisor
    except OSError:
        pass


class PodSupervisor:
    """One pod: runs its kopf container as a local process, restarts it like a kubelet."""

    def __init__(self, kube: Kube, namespace: str, pod: dict[str, Any], container: dict[str, Any],
                 argv: list[str], env: dict[str, str], cwd: Path, log_dir: Path,
                 exit_reason: str | None, echo: bool, stop: threading.Event) -> None:
        self.kube, self.namespace, self.pod = kube, namespace, pod
        self.name = pod['metadata']['name']
        self.container = container
        self.cname = container['name']
        self.image = container.get('image', '')
        self.argv, self.env, self.cwd = argv, env, cwd
        self.log_dir = log_dir
        self.exit_reason = exit_reason
        self.echo = echo
        self.stop = stop
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.current_log: Path | None = None
        self.previous_log: Path | None = None
        self.started = threading.Event()
        self.failed: str | None = None
        self.thread = threading.Thread(target=self._loop, name=f'pod-{self.name}', daemon=True)
        self._lock = threading.Lock()

    # Logs object: kwok serves GET pods/POD/log from these files.
    def _apply_logs(self) -> None:
        entry: dict[str, Any] = {'containers': [self.cname], 'logsFile': str(self.current_log), 'follow': True}
        if self.previous_log:
            entry['previousLogsFile'] = str(self.previous_log)
        logs = [entry]
        for c in self.pod['spec']['containers']:
            if c['name'] != self.cname:  # other containers: an empty log
                empty = self.log_dir.parent / c['name'] / '0.log'
                empty.parent.mkdir(parents=True, exist_ok=True)
                empty.touch()
                logs.append({'containers': [c['name']], 'logsFile': str(empty), 'follow': True})
        self.kube.apply([{
            'apiVersion': 'kwok.x-k8s.io/v1alpha1', 'kind': 'Logs',
            'metadata': {'name': self.name, 'namespace': self.namespace},
            'spec': {'logs': logs},
        }], self.namespace)

    def _pump(self, stream: Any, kind: str, fh: Any) -> None:
        for raw in iter(stream.readline, b''):
            line = raw.rstrip(b'\n').rstrip(b'\r').decode('utf-8', 'replace')
            with self._lock:
                fh.write(f'{rfc3339nano()} {kind} F {line}\n')
                fh.flush()
            if self.echo:
                print(f'[{self.name}] {line}', file=sys.stderr, flush=True)
        stream.close()

    def _status(self, state: dict[str, Any], ready: bool, last: dict[str, Any] | None) -> None:
        try:
            set_container_status(self.kube, self.namespace, self.name, self.cname,
                                 state=state, last=last, restarts=self.restarts, ready=ready)
        except FixtureError as e:
            log(f'{self.name}: could not update pods/status: {e}')

    def _start(self) -> tuple[Any, list[threading.Thread]]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.current_log = self.log_dir / f'{self.restarts}.log'
        fh = open(self.current_log, 'w', encoding='utf-8')
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, preexec_fn=_set_pdeathsig)
        # The running process, for tests that signal it (SIGSTOP: Running, yet frozen).
        (self.log_dir / 'pid').write_text(str(self.proc.pid))
        pumps = [threading.Thread(target=self._pump, args=(self.proc.stdout, 'stdout', fh), daemon=True),
                 threading.Thread(target=self._pump, args=(self.proc.stderr, 'stderr', fh), daemon=True)]
        for t in pumps:
            t.start()
        self._apply_logs()
        return fh, pumps

    def _loop(self) -> None:
        last: dict[str, Any] | None = None
        backoff = 0.0
        try:
            while not self.stop.is_set():
                started_ns = time.time_ns()
                fh, pumps = self._start()
                log(f'{self.name}: started pid {self.proc.pid} (run {self.restarts}), log {self.current_log}')
                if self.restarts:
                    self._status({'running': {'startedAt': rfc3339(started_ns)}}, True, last)
                self.started.set()
                while self.proc.poll() is None and not self.stop.is_set():
                    time.sleep(0.2)
                if self.stop.is_set():
                    self._terminate()
                    for t in pumps:
                        t.join(timeout=5)
                    fh.close()
                    return
                for t in pumps:
                    t.join(timeout=5)
                fh.close()
                code = self.proc.returncode
                code = 128 - code if code < 0 else code
                reason = self.exit_reason or ('Completed' if code == 0 else 'Error')
                if reason == 'OOMKilled':
                    code = 137
                ran = (time.time_ns() - started_ns) / 1e9
                backoff = 1.0 if (backoff == 0 or ran > BACKOFF_RESET_AFTER) else min(backoff * 2, BACKOFF_CAP)
                self.restarts += 1
                self.previous_log = self.current_log
                last = {'terminated': {'exitCode': code, 'reason': reason, 'startedAt': rfc3339(started_ns),
                                       'finishedAt': rfc3339()}}
                log(f'{self.name}: exited with code {code} ({reason}) after {ran:.1f}s; '
                    f'restart {self.restarts} in {backoff:.0f}s')
                uid = self.pod['metadata'].get('uid', '')
                self._status({'waiting': {
                    'reason': 'CrashLoopBackOff',
                    'message': f'back-off {backoff:.0f}s restarting failed container={self.cname} '
                               f'pod={self.name}_{self.namespace}({uid})'}}, False, last)
                self.stop.wait(backoff)
        except Exception as e:  # surfaced by the main thread
            self.failed = f'{type(e).__name__}: {e}'
            log(f'{self.name}: supervisor failed: {self.failed}')
            self._terminate()
            self.started.set()

    def _terminate(self) -> None:
        p = self.proc
        if not p or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            log(f'{self.name}: kopf did not exit in {STOP_GRACE:.0f}s, killing it')
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        # Any grandchild left in the group.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def cmd_run(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir).resolve() if args.workdir else default_workdir()
    fixture_dir = FIXTURES / args.fixture
    if not fixture_dir.is_dir():
        raise FixtureError(f'no fixture {args.fixture!r} in {FIXTURES}')
    kube = Kube(str(Path(args.kubeconfig).resolve()), find_kubectl(workdir))
    ns = args.namespace
    stop = threading.Event()
    supervising = False

    def on_signal(signum: int, _frame: Any) -> None:
        log(f'got signal {signum}, stopping')
        stop.set()
        if not supervising:  # still setting up: no operator process yet
            raise SystemExit(0)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    run_dir = workdir / 'run'
    run_dir.mkdir(parents=True, exist_ok=True)
    pidfile = run_dir / f'fixture-{ns}-{os.getpid()}.pid'
    pidfile.write_text(str(os.getpid()))
    sups: list[PodSupervisor] = []
    try:
        docs = load_manifests(fixture_dir, ns)
        if args.write_command:
            write_out_command(docs, fixture_dir)
        expect = load_expect(fixture_dir)
        exit_reason = args.exit_reason or (expect.get('harness') or {}).get('exitReason')
        kopf_version = args.kopf_version or (expect.get('harness') or {}).get('kopfVersion')
        venv_bin = kopf_venv_bin(kopf_version)
        log(f'kopf from {venv_bin}')
        deploys = [d for d in docs if d.get('kind') == 'Deployment']
        if len(deploys) != 1:
            raise FixtureError(f'{fixture_dir}/manifests.yaml must hold exactly one Deployment, has {len(deploys)}')
        deploy = deploys[0]
        log(f'fixture {args.fixture} into namespace {ns}')
        apply_manifests(kube, docs, ns)
        pods = wait_for_pods(kube, ns, deploy)
        sa = pods[0]['spec'].get('serviceAccountName') or 'default'
        token_kubeconfig = workdir / 'pod-logs' / ns / f'kubeconfig-{sa}'
        write_token_kubeconfig(kube, ns, sa, token_kubeconfig)
        log(f'token kubeconfig for system:serviceaccount:{ns}:{sa}: {token_kubeconfig}')
        for pod in pods:
            container = kopf_container(pod['spec'])
            env = container_env(kube, ns, pod, container)
            argv, extra_env, notes = local_argv(container, env, fixture_dir, args.log_format, venv_bin)
            proc_env = {
                'PATH': f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                'HOME': os.environ.get('HOME', '/root'),
                'LANG': os.environ.get('LANG', 'C.UTF-8'),
                'HOSTNAME': pod['metadata']['name'],
                'PYTHONUNBUFFERED': '1',
                'PYTHONDONTWRITEBYTECODE': '1',
                **env, **extra_env,
                'KUBECONFIG': str(token_kubeconfig),
            }
            wd = container.get('workingDir')
            cwd = fixture_dir if not wd or wd == '/app' or wd.startswith('/app/') else fixture_dir
            log_dir = workdir / 'pod-logs' / ns / pod['metadata']['name'] / container['name']
            log(f"{pod['metadata']['name']}: {' '.join(argv)}" + (f" ({'; '.join(notes)})" if notes else ''))
            sups.append(PodSupervisor(kube, ns, pod, container, argv, proc_env, cwd, log_dir,
                                      exit_reason, args.echo, stop))
        supervising = True
        for s in sups:
            s.thread.start()
        for s in sups:
            while not s.started.wait(0.5):
                if stop.is_set():
                    break
            if s.failed:
                raise FixtureError(f"pod {s.name}: {s.failed}")
        if not stop.is_set():
            for s in sups:
                print(f'FIXTURE POD pod={s.name} log={s.log_dir / "0.log"}', flush=True)
            print(f'FIXTURE READY pod={sups[0].name} log={sups[0].log_dir / "0.log"}', flush=True)
        while not stop.is_set():
            stop.wait(0.5)
            for s in sups:
                if s.failed:
                    raise FixtureError(f'pod {s.name}: {s.failed}')
        return 0
    finally:
        stop.set()
        for s in sups:
            if s.thread.is_alive():
                s.thread.join(timeout=STOP_GRACE + 5)
            s._terminate()
        pidfile.unlink(missing_ok=True)
        log('stopped')


def cmd_set_state(args: argparse.Namespace) -> int:
    kube = Kube(str(Path(args.kubeconfig).resolve()), find_kubectl(default_workdir()))
    pod = kube.json('-n', args.namespace, 'get', 'pod', args.pod)
    cname = args.container or kopf_container(pod['spec'])['name']
    cur = next((c for c in pod['status'].get('containerStatuses') or [] if c['name'] == cname), {})
    restarts = args.restart_count if args.restart_count is not None else \
        cur.get('restartCount', 0) + (0 if args.running else 1)
    now = rfc3339()
    last = None
    if args.oom:
        last = {'terminated': {'exitCode': 137, 'reason': 'OOMKilled', 'startedAt': now, 'finishedAt': now}}
        state, ready = {'running': {'startedAt': now}}, True
    elif args.crashloop:
        last = {'terminated': {'exitCode': args.exit_code, 'reason': args.reason or 'Error',
                               'startedAt': now, 'finishedAt': now}}
        state = {'waiting': {'reason': 'CrashLoopBackOff',
                             'message': f'back-off 10s restarting failed container={cname} '
                                        f"pod={args.pod}_{args.namespace}({pod['metadata']['uid']})"}}
        ready = False
    else:
        state, ready = {'running': {'startedAt': now}}, True
    set_container_status(kube, args.namespace, args.pod, cname, state=state, last=last,
                         restarts=restarts, ready=ready)
    log(f'pod {args.namespace}/{args.pod} container {cname}: restartCount={restarts}, '
        f"{'OOMKilled' if args.oom else 'CrashLoopBackOff' if args.crashloop else 'running'}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    r = sub.add_parser('run', help='deploy a fixture and run its operator locally until SIGTERM')
    r.add_argument('--kubeconfig', required=True, help='admin kubeconfig (hack/cluster.sh kubeconfig)')
    r.add_argument('--fixture', required=True, help='a directory name under tests/fixtures/kopf/')
    r.add_argument('--namespace', required=True)
    r.add_argument('--log-format', choices=['full', 'plain', 'json'], help='override kopf --log-format')
    r.add_argument('--write-command', action='store_true',
                   help="write the image's ENTRYPOINT and CMD (image.yaml) into the Deployment's command")
    r.add_argument('--workdir', help='default: $KOPF_AUDIT_WORKDIR or <repo>/.e2e')
    r.add_argument('--exit-reason', choices=['Error', 'OOMKilled'],
                   help='reason recorded when the process exits (default Error; expect.yaml harness.exitReason)')
    r.add_argument('--kopf-version', help='run the operator on this kopf (hack/kopf-venv.sh VERSION; '
                   'default: expect.yaml harness.kopfVersion, else the pinned one)')
    r.add_argument('--echo', action='store_true', help="also copy the operator's output to stderr")
    s = sub.add_parser('set-state', help="set a pod container's state in pods/status")
    s.add_argument('--kubeconfig', required=True)
    s.add_argument('--namespace', required=True)
    s.add_argument('--pod', required=True)
    s.add_argument('--container')
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument('--oom', action='store_true', help='running again, lastState terminated OOMKilled (137)')
    g.add_argument('--crashloop', action='store_true', help='waiting CrashLoopBackOff, lastState terminated')
    g.add_argument('--running', action='store_true', help='running, ready')
    s.add_argument('--restart-count', type=int, help='default: current + 1 (--oom/--crashloop)')
    s.add_argument('--exit-code', type=int, default=1, help='with --crashloop')
    s.add_argument('--reason', help='lastState reason with --crashloop (default Error)')
    args = p.parse_args()
    try:
        return cmd_run(args) if args.cmd == 'run' else cmd_set_state(args)
    except FixtureError as e:
        log(f'ERROR: {e}')
        print(f'FIXTURE FAILED {e}'.splitlines()[0], flush=True)
        return 1


if __name__ == '__main__':
    sys.exit(main())
