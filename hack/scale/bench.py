#!/usr/bin/env python3
"""The scale bench (hack/bench-scale.sh runs it): builds a platform-sized scenario on
the local cluster and measures the auditor in it. See BENCHMARKS.md, "Scale: 1,000
audits in a 10,000-pod cluster".

    python3 hack/scale/bench.py --kubeconfig K --workdir W --auditor BIN [scale options]

Setup (skipped when the same scale is already in place, see --reuse):
  kwok nodes; noise namespaces with Deployments whose pods kube-controller-manager
  creates, kube-scheduler binds and kwok runs; audit targets (one namespace, one
  ServiceAccount and its RBAC, handled objects, a kopf Deployment each), their kopf
  logs served through kwok `Logs` objects; real kopf fixtures (hack/fixture.py);
  generated Events.
Measurement, in order: the auditor at rest; N KopfAudits created (time to Ready,
headline Events, status writes); a steady window; a label change on ClusterRole
`view`, then on a ClusterRole bound to one operator; optionally an interval of 30s;
SIGTERM; a restart (time until every audit ran again, /readyz against "caches
synced"); another restart with SIGTERM in the middle of the wave.
With --cluster-audit: the auditor runs with --cluster-audits and no KopfAudit is
written by the bench; at rest, then ONE ClusterKopfAudit (no selector) until it has
generated a Ready KopfAudit for every target and fixture (none for the noise), then the
steady window; the herds, the 30s interval and the restarts are not run.
Results: a summary on stdout and JSON in W/results/.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402
from gen import LABEL, Plan, Target  # noqa: E402
from kube import ApiError, Kube, log, parallel  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HEADLINES = {'AuditPassed', 'NonCompliant', 'ComplianceUnknown'}
CONTROLLER = 'kopfaudit.dev/kopf-audit'
KA = '/apis/kopfaudit.dev/v1alpha1'
CLK = os.sysconf('SC_CLK_TCK')
METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'
CKA_NAME = 'scale'
CKA_LABEL = 'kopfaudit.dev/cluster-audit'
NOISE_EVENT_CHECKS = {'events.logging-flood', 'events.steady-state-spam', 'events.duplicates', 'events.truncated'}


def now_s() -> float:
    return time.time()


def mib(kib: float | None) -> str:
    return '-' if kib is None else f'{kib / 1024:.0f} MiB'


# ------------------------------------------------------------------ /proc readers

def proc_cpu(pid: int | None) -> float | None:
    """user+system CPU seconds of a process."""
    if not pid:
        return None
    try:
        rest = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / CLK
    except (OSError, IndexError):
        return None


def proc_mem(pid: int) -> tuple[int | None, int | None]:
    rss = hwm = None
    try:
        for line in open(f'/proc/{pid}/status'):
            if line.startswith('VmRSS:'):
                rss = int(line.split()[1])
            elif line.startswith('VmHWM:'):
                hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


def alive(pid: int) -> bool:
    try:
        st = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0]
        return st not in ('Z', 'X')
    except (OSError, IndexError):
        return False


def connections(pid: int, port: int) -> int:
    """Established TCP connections of `pid` to 127.0.0.1:`port` (what `ss -tnp` shows for
    the PID, read the same way: the process's socket inodes matched in /proc/net/tcp)."""
    inodes = set()
    try:
        for fd in os.listdir(f'/proc/{pid}/fd'):
            try:
                link = os.readlink(f'/proc/{pid}/fd/{fd}')
            except OSError:
                continue
            if link.startswith('socket:['):
                inodes.add(link[8:-1])
    except OSError:
        return 0
    want = f':{port:04X}'
    n = 0
    for table in ('tcp', 'tcp6'):
        try:
            with open(f'/proc/{pid}/net/{table}') as f:
                next(f)
                for line in f:
                    p = line.split()
                    if p[3] == '01' and p[2].endswith(want) and p[9] in inodes:
                        n += 1
        except OSError:
            pass
    return n


# ------------------------------------------------------------------ metrics

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


def parse_metrics(text: str, names: set[str] | None = None) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if not line or line[0] == '#':
            continue
        m = _SAMPLE.match(line)
        if not m or (names and m.group(1) not in names):
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ''))
        try:
            out.append((m.group(1), labels, float(m.group(3))))
        except ValueError:
            pass
    return out


def last_audits(samples: list[tuple[str, dict[str, str], float]]) -> dict[str, float]:
    """Each audit's last run (namespace/name -> Unix time), from the auditor's gauge."""
    return {f"{l.get('namespace')}/{l.get('name')}": v for n, l, v in samples
            if n == 'kopf_audit_last_audit_timestamp_seconds'}


def off_schedule(before: dict[str, float], seen: list[dict[str, float]], interval: float) -> list[str]:
    """The audits that ran sooner than their interval after their previous run: re-run
    by a change, not by their schedule (a scheduled run comes a whole interval after the
    previous one; 15 s of slack for the debounce and the scrape)."""
    last = dict(before)
    out: set[str] = set()
    for sample in seen:
        for audit, t in sample.items():
            prev = last.get(audit)
            if prev is not None and t > prev:
                if t - prev < interval - 15:
                    out.add(audit)
            last[audit] = t
    return sorted(out)


def msum(samples: list[tuple[str, dict[str, str], float]], name: str, **want: str) -> float:
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in want.items()))


class Auditor:
    """The auditor process: its log (and when it said what), /metrics, /readyz."""

    def __init__(self, binary: str, kubeconfig: str, extra: list[str], logfile: Path) -> None:
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            self.port = s.getsockname()[1]
        self.argv = [binary, 'run', '--log-format', 'json', '--log-level', 'info',
                     '--http-addr', f'127.0.0.1:{self.port}', *extra]
        env = dict(os.environ, KUBECONFIG=kubeconfig)
        self.logfile = logfile
        self.started = now_s()
        self.proc = subprocess.Popen(self.argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        self.seen: dict[str, float] = {}
        self.lines = 0
        self.errors = 0
        self.audited_lines = 0
        # (when, related object, audit) of each audit kube-runtime ran because a watched
        # object related to it changed, from the auditor's own log.
        self.related_reruns: list[tuple[float, str, str]] = []
        self.error_kinds: dict[str, int] = {}
        # (when, fields) of each discovery pass the ClusterKopfAudit controller logged.
        self.discoveries: list[tuple[float, dict[str, Any]]] = []
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()
        log(f'auditor started: pid {self.pid}, {" ".join(self.argv)}')

    def _pump(self) -> None:
        with open(self.logfile, 'w', buffering=1) as f:
            assert self.proc.stdout
            for raw in self.proc.stdout:
                line = raw.decode('utf-8', 'replace')
                f.write(line)
                self.lines += 1
                if '"level":"ERROR"' in line:
                    self.errors += 1
                    m = re.search(r'"message":"([^"]{0,80})', line)
                    key = m.group(1) if m else '?'
                    self.error_kinds[key] = self.error_kinds.get(key, 0) + 1
                if '"message":"audited' in line:
                    self.audited_lines += 1
                    m = re.search(r'"object.reason":"related object updated: ([^"]+)".*?"audit":"([^"]+)"', line)
                    if m:
                        self.related_reruns.append((now_s(), m.group(1), m.group(2)))
                if '"message":"cluster audit discovered' in line:
                    try:
                        self.discoveries.append((now_s(), json.loads(line)))
                    except ValueError:
                        pass
                for key in ('caches synced', 'shutdown requested'):
                    if key in line and key not in self.seen:
                        self.seen[key] = now_s()

    def metrics(self) -> list[tuple[str, dict[str, str], float]]:
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{self.port}/metrics', timeout=10) as r:
                return parse_metrics(r.read().decode())
        except OSError:
            return []

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{self.port}/readyz', timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self, grace: float = 60.0) -> dict[str, Any]:
        """SIGTERM; SIGKILL after `grace` seconds. Returns what happened."""
        t0 = now_s()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=grace)
            out = {'exit_s': round(now_s() - t0, 2), 'killed': False, 'exit_code': code}
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
            out = {'exit_s': None, 'killed': True, 'alive_after_s': grace, 'exit_code': code}
        self._t.join(timeout=5)
        out['log_errors'] = self.errors
        out['log_error_kinds'] = dict(sorted(self.error_kinds.items(), key=lambda x: -x[1])[:4])
        log(f'auditor pid {self.pid} stopped: {out}')
        return out


def counters(samples: list[tuple[str, dict[str, str], float]]) -> dict[str, Any]:
    """The auditor's counters this bench compares."""
    by_method: dict[str, float] = {}
    watches = 0.0
    for n, l, v in samples:
        if n == 'kopf_audit_api_requests_total':
            if l.get('watch') == 'true':
                watches += v
            else:
                by_method[l.get('method', '?')] = by_method.get(l.get('method', '?'), 0) + v
    names = {n for n, _, _ in samples}
    by_route: dict[str, float] = {}
    for n, l, v in samples:
        if n == 'kopf_audit_api_responses_total' and l.get('verb') != 'watch':
            key = f"{l.get('verb', '?')} {l.get('resource', '?')}"
            by_route[key] = by_route.get(key, 0) + v
    return {
        'requests': by_method, 'watches': watches, 'responses': by_route,
        'audits': msum(samples, 'kopf_audit_audits_total'),
        'status_writes': msum(samples, 'kopf_audit_status_writes_total'),
        'failures': msum(samples, 'kopf_audit_audit_failures_total'),
        'duration_sum': msum(samples, 'kopf_audit_audit_duration_seconds_sum'),
        'duration_count': msum(samples, 'kopf_audit_audit_duration_seconds_count'),
        'log_bytes': msum(samples, 'kopf_audit_log_bytes_read_total') if 'kopf_audit_log_bytes_read_total' in names else None,
        'in_flight': msum(samples, 'kopf_audit_api_requests_in_flight') if 'kopf_audit_api_requests_in_flight' in names else None,
    }


def delta(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    methods = sorted(set(a['requests']) | set(b['requests']))
    req = {m: b['requests'].get(m, 0) - a['requests'].get(m, 0) for m in methods}
    out = {'requests': {m: int(v) for m, v in req.items() if v}, 'requests_total': int(sum(req.values())),
           'watches': int(b['watches'] - a['watches']), 'audits': int(b['audits'] - a['audits']),
           'status_writes': int(b['status_writes'] - a['status_writes']),
           'failures': int(b['failures'] - a['failures'])}
    dc = b['duration_count'] - a['duration_count']
    routes = sorted(set(a.get('responses', {})) | set(b.get('responses', {})))
    by_route = {r: int(b.get('responses', {}).get(r, 0) - a.get('responses', {}).get(r, 0)) for r in routes}
    out['responses'] = dict(sorted(((r, v) for r, v in by_route.items() if v), key=lambda x: -x[1]))
    out['mean_audit_s'] = round((b['duration_sum'] - a['duration_sum']) / dc, 3) if dc else None
    if a['log_bytes'] is not None and b['log_bytes'] is not None:
        out['log_bytes'] = int(b['log_bytes'] - a['log_bytes'])
    return out


# ------------------------------------------------------------------ samplers

class Sampler(threading.Thread):
    """Calls fn every `period` seconds while running; keeps (time, value)."""

    def __init__(self, period: float, fn: Any) -> None:
        super().__init__(daemon=True)
        self.period, self.fn = period, fn
        self.samples: list[tuple[float, Any]] = []
        self.halt = threading.Event()
        self.paused = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            if not self.paused.is_set():
                try:
                    v = self.fn()
                except Exception:  # noqa: BLE001 (a sample lost is not a failure)
                    v = None
                if v is not None:
                    self.samples.append((now_s(), v))
            self.halt.wait(self.period)

    def between(self, t0: float, t1: float) -> list[Any]:
        return [v for t, v in self.samples if t0 <= t <= t1]


def changed(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The status fields that differ (findings and conditions by their inner fields)."""
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) == b.get(k):
            continue
        if k in ('findings', 'conditions') and isinstance(a.get(k), list) and isinstance(b.get(k), list) \
                and len(a[k]) == len(b[k]):
            inner = {f for x, y in zip(a[k], b[k]) for f in set(x) | set(y) if x.get(f) != y.get(f)}
            out += [f'{k}.{f}' for f in sorted(inner)]
        else:
            out.append(k)
    return out


def changed_counts(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    d = {k: v - a.get(k, 0) for k, v in b.items() if v - a.get(k, 0)}
    return dict(sorted(d.items(), key=lambda x: -x[1]))


class AuditWatch(threading.Thread):
    """A watch on every KopfAudit: when each became Ready=True, how often its status
    changed, and its last status."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(daemon=True)
        self.kube = kube
        self.halt = threading.Event()
        self.lock = threading.Lock()
        self.objs: dict[str, dict[str, Any]] = {}   # uid -> {ns, name, ready_at, writes: [t], status}
        self.relists = 0
        self.changed: dict[str, int] = {}           # what status writes changed, by field

    @staticmethod
    def _ready(obj: dict[str, Any]) -> bool:
        for c in (obj.get('status') or {}).get('conditions') or []:
            if c.get('type') == 'Ready':
                return c.get('status') == 'True'
        return False

    def _see(self, typ: str, obj: dict[str, Any]) -> None:
        md = obj['metadata']
        uid = md['uid']
        t = now_s()
        with self.lock:
            if typ == 'DELETED':
                self.objs.pop(uid, None)
                return
            o = self.objs.get(uid)
            if o is None:
                o = self.objs[uid] = {'uid': uid, 'ns': md['namespace'], 'name': md['name'], 'created': t,
                                      'ready_at': None, 'writes': [], 'status': None,
                                      'labels': md.get('labels') or {},
                                      'target': ((obj.get('spec') or {}).get('target') or {}).get('deployment')}
            st = obj.get('status')
            if o['status'] is not None and st != o['status'] or o['status'] is None and st:
                o['writes'].append(t)
                for k in changed(o['status'] or {}, st or {}):
                    self.changed[k] = self.changed.get(k, 0) + 1
            o['status'] = st
            if o['ready_at'] is None and self._ready(obj):
                o['ready_at'] = t

    def run(self) -> None:
        while not self.halt.is_set():
            items, rv = self.kube.list_rv(f'{KA}/kopfaudits')
            for it in items:
                self._see('ADDED', it)
            for ev in self.kube.watch(f'{KA}/kopfaudits', rv, self.halt):
                if ev['type'] == 'RELIST':
                    self.relists += 1
                    break
                self._see(ev['type'], ev['object'])

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(o, writes=list(o['writes'])) for o in self.objs.values()]


class LogAppender(threading.Thread):
    """The operators keep logging: appends to each target's current log file at its rate,
    every `period` seconds. Counts the bytes appended per target."""

    def __init__(self, targets: list[Target], period: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.targets = [t for t in targets if t.log_file]
        self.period = period
        self.halt = threading.Event()
        self.appended: dict[str, int] = {t.ns: 0 for t in self.targets}
        self.total = 0
        self.since = now_s()
        rng = random.Random(7)
        self.writers = {t.ns: gen.LogWriter(t, rng) for t in self.targets}

    def run(self) -> None:
        last = time.time_ns()
        while not self.halt.wait(self.period):
            now = time.time_ns()
            for t in self.targets:
                text = ''.join(self.writers[t.ns].lines_between(last, now))
                if text:
                    with open(t.log_file, 'a', encoding='utf-8') as f:
                        f.write(text)
                    self.appended[t.ns] += len(text)
                    self.total += len(text)
            last = now


class EventChurn(threading.Thread):
    """New Events keep coming (the API server drops Events an hour old): `rate` a second,
    the same mix as the generated ones."""

    def __init__(self, kube: Kube, plan: Plan, rate: float, pods: dict[str, list[str]]) -> None:
        super().__init__(daemon=True)
        self.kube, self.plan, self.rate, self.pods = kube, plan, rate, pods
        self.halt = threading.Event()
        self.created = 0

    def run(self) -> None:
        if self.rate <= 0:
            return
        rng = random.Random(11)
        k = 0
        while not self.halt.is_set():
            t0 = now_s()
            batch = max(1, int(self.rate * 5))
            k += 1
            for ns, ev in gen.events(self.plan, batch, now_s(), rng, self.pods, spread_s=5, tag=f'c{k:x}',
                                     pod_starts=False):
                try:
                    self.kube.create(f'/api/v1/namespaces/{ns}/events', ev)
                    self.created += 1
                except ApiError:
                    pass
            self.halt.wait(max(0.0, 5 - (now_s() - t0)))


# ------------------------------------------------------------------ setup

def wait_established(kube: Kube, names: list[str], timeout: float = 120) -> None:
    deadline = now_s() + timeout
    for n in names:
        while True:
            crd = kube.get(f'/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{n}')
            if any(c['type'] == 'Established' and c['status'] == 'True'
                   for c in (crd.get('status') or {}).get('conditions') or []):
                break
            if now_s() > deadline:
                raise RuntimeError(f'CRD {n} not Established')
            time.sleep(0.5)


def count(kube: Kube, path: str, **params: str) -> int:
    """Items of a list, read as metadata only, 5000 a page."""
    n = 0
    cont = ''
    while True:
        q = dict(params, limit='5000')
        if cont:
            q['continue'] = cont
        page = kube.request('GET', f'{path}?{urllib.parse.urlencode(q)}', accept=METADATA_LIST)
        n += len(page.get('items') or [])
        cont = page['metadata'].get('continue') or ''
        if not cont:
            return n



def setup(kube: Kube, plan: Plan, args: argparse.Namespace, res: dict[str, Any]) -> dict[str, list[str]]:
    times: dict[str, float] = {}
    res['setup'] = times
    w = args.workers
    total_pods = sum(r for _, _, r in plan.noise_deployments) + len(plan.targets)
    per_node = 1000
    nodes = [f'scale-node-{k:03d}' for k in range(math.ceil((total_pods + 200) / per_node))]
    t0 = now_s()
    parallel(lambda n: kube.create('/api/v1/nodes', gen.node(n, per_node)), nodes, w, 'nodes', log=log)
    nss = [gen.namespace(n, 'noise') for n in plan.noise_ns] + [gen.namespace(t.ns, 'operator') for t in plan.targets]
    parallel(lambda n: kube.create('/api/v1/namespaces', n), nss, w, 'namespaces', log=log)
    crds = [gen.crd(k) for k in range(min(gen.CRD_KINDS, max(len(plan.targets), 1)))]
    parallel(lambda c: kube.create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', c), crds, w,
             'CRDs', log=log)
    wait_established(kube, [c['metadata']['name'] for c in crds])
    # The default ServiceAccount of each new namespace: pods wait for it.
    times['namespaces_nodes_crds_s'] = round(now_s() - t0, 1)
    t1 = now_s()
    parallel(lambda d: kube.create(f'/apis/apps/v1/namespaces/{d[0]}/deployments', gen.noise_deployment(*d)),
             plan.noise_deployments, w, 'noise Deployments', log=log)

    def make_target(t: Target) -> None:
        for path, body in gen.target_objects(t):
            kube.create(path, body)
    parallel(make_target, plan.targets, w, 'audit targets (RBAC, objects, Deployment)', log=log)
    times['objects_s'] = round(now_s() - t1, 1)
    log(f'waiting for {total_pods} pods Running (kube-controller-manager creates them, kube-scheduler binds, kwok runs)')
    t2 = now_s()
    last_report = 0.0
    deadline = now_s() + args.pod_timeout
    prev = (0, 0, now_s())
    while True:
        total = count(kube, '/api/v1/pods', labelSelector=f'{LABEL} in (noise,operator)')
        running = count(kube, '/api/v1/pods', labelSelector=f'{LABEL} in (noise,operator)',
                        fieldSelector='status.phase=Running')
        el = now_s() - t2
        if now_s() - last_report >= 20 or running >= total_pods:
            rate = (running - prev[1]) / max(now_s() - prev[2], 1)
            eta = (total_pods - running) / rate if rate > 0 else float('inf')
            log(f'pods: {total}/{total_pods} created, {running} Running after {el:.0f}s '
                f'({rate:.1f}/s now{"" if math.isinf(eta) else f", ~{eta / 60:.0f} min left"})')
            prev = (total, running, now_s())
            last_report = now_s()
        if running >= total_pods:
            break
        if now_s() > deadline:
            raise RuntimeError(f'only {running}/{total_pods} pods Running after {args.pod_timeout}s')
        time.sleep(15)
    times['pods_running_s'] = round(now_s() - t2, 1)
    times['pods'] = total_pods
    times['pods_per_s'] = round(total_pods / max(now_s() - t2, 1), 1)
    return finish_setup(kube, plan, args, res)


def pod_names(kube: Kube, plan: Plan) -> dict[str, list[str]]:
    pods: dict[str, list[str]] = {}
    for p in kube.list('/api/v1/pods', limit=2000, params={'labelSelector': f'{LABEL} in (noise,operator)'}):
        pods.setdefault(p['metadata']['namespace'], []).append(p['metadata']['name'])
    for t in plan.targets:
        names = sorted(pods.get(t.ns) or [])
        t.pod = names[0] if names else ''
    return pods


def finish_setup(kube: Kube, plan: Plan, args: argparse.Namespace, res: dict[str, Any]) -> dict[str, list[str]]:
    """What every run redoes: the logs (their times are relative to now), restarted
    containers' states, the Logs objects, and the Events (the API server drops them
    after an hour)."""
    times = res.setdefault('setup', {})
    w = args.workers
    pods = pod_names(kube, plan)
    missing = [t.ns for t in plan.targets if not t.pod]
    if missing:
        raise RuntimeError(f'{len(missing)} targets have no pod, e.g. {missing[:3]}')
    t0 = now_s()
    logroot = Path(args.workdir) / 'pod-logs'
    now_ns = time.time_ns()
    rng = random.Random(3)
    sizes = []
    for k, t in enumerate(plan.targets):
        d = logroot / t.ns / t.pod / 'operator'
        d.mkdir(parents=True, exist_ok=True)
        t.log_file = str(d / f'{t.restarts}.log')
        start = now_ns - int(t.uptime * 1e9)
        sizes.append(gen.write_log(t.log_file, t, start, now_ns, rng))
        if t.restarts:
            t.previous_log_file = str(d / f'{t.restarts - 1}.log')
            gen.write_log(t.previous_log_file, t, start - 3600 * 10**9, start - 2 * 10**9, rng)
        if (k + 1) % 200 == 0:
            log(f'logs: {k + 1}/{len(plan.targets)} written ({sum(sizes) / 2**20:.0f} MiB)')
    sizes.sort()
    times['logs_s'] = round(now_s() - t0, 1)
    if sizes:
        res['logs'] = {'files': len(sizes), 'total_mib': round(sum(sizes) / 2**20, 1),
                       'median_kib': round(sizes[len(sizes) // 2] / 1024, 1),
                       'min_kib': round(sizes[0] / 1024, 1), 'max_kib': round(sizes[-1] / 1024, 1),
                       'operator_bytes_per_s': round(sum(t.rate for t in plan.targets))}
        log(f"logs: {res['logs']}")

    def logs_object(t: Target) -> None:
        entry: dict[str, Any] = {'containers': ['operator'], 'logsFile': t.log_file, 'follow': True}
        if t.previous_log_file:
            entry['previousLogsFile'] = t.previous_log_file
        body = {'apiVersion': 'kwok.x-k8s.io/v1alpha1', 'kind': 'Logs',
                'metadata': {'name': t.pod, 'namespace': t.ns}, 'spec': {'logs': [entry]}}
        path = f'/apis/kwok.x-k8s.io/v1alpha1/namespaces/{t.ns}/logs'
        try:
            kube.request('POST', path, body)
        except ApiError as e:
            if e.status != 409:
                raise
            kube.patch(f'{path}/{t.pod}', {'spec': body['spec']})
        if t.restart:
            restarted(kube, t)
    parallel(logs_object, plan.targets, w, 'kwok Logs objects (and restarted containers)', log=log)
    t1 = now_s()
    ensure_events(kube, plan, args, res, pods)
    times['events_s'] = round(now_s() - t1, 1)
    return pods


def restarted(kube: Kube, t: Target) -> None:
    """A crash-looping or OOM-killed container, as a kubelet reports it."""
    now = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    started = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now_s() - t.uptime))
    reason, code = ('OOMKilled', 137) if t.restart == 'oom' else ('Error', 1)
    st = {'name': 'operator', 'image': f'registry.example.com/operators/{t.name}:2.{t.i % 9}.0', 'imageID': '',
          'ready': True, 'started': True, 'restartCount': t.restarts, 'state': {'running': {'startedAt': started}},
          'lastState': {'terminated': {'exitCode': code, 'reason': reason, 'startedAt': now, 'finishedAt': started}}}
    kube.patch(f'/api/v1/namespaces/{t.ns}/pods/{t.pod}/status', {'status': {'containerStatuses': [st]}},
               kind='strategic')


def ensure_events(kube: Kube, plan: Plan, args: argparse.Namespace, res: dict[str, Any],
                  pods: dict[str, list[str]]) -> None:
    """Fresh generated Events: the API server drops Events an hour after they were written
    (--event-ttl), so older ones would vanish in the middle of the measurement."""
    have = count(kube, '/api/v1/events', labelSelector=f'{LABEL}=noise')
    if have:
        nss = [n['metadata']['name'] for n in kube.list('/api/v1/namespaces', params={
            'labelSelector': f'{LABEL} in (noise,operator)'})]
        parallel(lambda ns: kube.request('DELETE', f'/api/v1/namespaces/{ns}/events?labelSelector='
                                         + urllib.parse.quote(f'{LABEL}=noise')),
                 nss, args.workers, f'deleting {have} older generated Events', log=log)
    rng = random.Random(int(now_s()))
    evs = list(gen.events(plan, plan.events, now_s(), rng, pods, tag=f'{int(now_s()) % 100000:x}'))
    parallel(lambda e: kube.create(f'/api/v1/namespaces/{e[0]}/events', e[1]), evs, args.workers,
             'Events', log=log)
    res['events_present'] = count(kube, '/api/v1/events')
    log(f"Events in the cluster: {res['events_present']} (generated and the control plane's)")


def start_fixtures(args: argparse.Namespace) -> list[tuple[str, str, subprocess.Popen[bytes], Path]]:
    out = []
    for name in [f for f in args.fixtures.split(',') if f]:
        ns = f'scale-fx-{name}'
        f = Path(args.workdir) / f'fixture-{name}.out'
        p = subprocess.Popen([sys.executable, str(REPO / 'hack' / 'fixture.py'), 'run', '--kubeconfig',
                              args.kubeconfig, '--fixture', name, '--namespace', ns,
                              '--workdir', args.fixture_workdir],
                             stdout=open(f, 'w'), stderr=open(f.with_suffix('.err'), 'w'))
        out.append((name, ns, p, f))
    for name, ns, p, f in out:
        for _ in range(180):
            text = f.read_text()
            if 'FIXTURE READY' in text or 'FIXTURE FAILED' in text or p.poll() is not None:
                break
            time.sleep(1)
        if 'FIXTURE READY' not in f.read_text():
            raise RuntimeError(f'fixture {name} did not start: {f.read_text()[-300:]} (see {f.with_suffix(".err")})')
        log(f'fixture {name} running in {ns}')
    return out


# ------------------------------------------------------------------ measurement

class Bench:
    def __init__(self, kube: Kube, plan: Plan, args: argparse.Namespace, res: dict[str, Any]) -> None:
        self.kube, self.plan, self.args, self.res = kube, plan, args, res
        cdir = Path(args.cluster_dir)
        self.apiserver_pid = self._pid(cdir / 'pids' / 'kube-apiserver.pid')
        self.etcd_pid = self._pid(cdir / 'pids' / 'etcd.pid')
        self.kwok_pid = self._pid(cdir / 'pids' / 'kwok-controller.pid')
        self.api_port = kube.port
        self.auditor: Auditor | None = None
        self.watch: AuditWatch | None = None
        self.rss = Sampler(1.0, self._rss)
        self.rss.start()

    @staticmethod
    def _pid(path: Path) -> int | None:
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None

    def _rss(self) -> Any:
        a = self.auditor
        if a and alive(a.pid):
            rss, hwm = proc_mem(a.pid)
            return (a.pid, rss, hwm)
        return None

    def cpu(self) -> dict[str, float | None]:
        return {'apiserver': proc_cpu(self.apiserver_pid), 'etcd': proc_cpu(self.etcd_pid),
                'kwok': proc_cpu(self.kwok_pid), 'auditor': proc_cpu(self.auditor.pid) if self.auditor else None,
                't': now_s()}

    @staticmethod
    def cpu_delta(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        el = b['t'] - a['t']
        out: dict[str, Any] = {'seconds': round(el, 1)}
        for k in ('apiserver', 'etcd', 'kwok', 'auditor'):
            if a.get(k) is not None and b.get(k) is not None:
                out[f'{k}_cpu_s'] = round(b[k] - a[k], 1)
                out[f'{k}_cores'] = round((b[k] - a[k]) / el, 2) if el else None
        return out

    def apiserver_metrics(self) -> list[tuple[str, dict[str, str], float]]:
        text = self.kube.request('GET', '/metrics', raw=True)
        return parse_metrics(text, {'apiserver_current_inflight_requests',
                                    'apiserver_flowcontrol_current_executing_requests',
                                    'apiserver_flowcontrol_current_inqueue_requests',
                                    'apiserver_request_total', 'process_cpu_seconds_total'})

    def inflight(self) -> dict[str, float]:
        m = self.apiserver_metrics()
        return {'inflight': msum(m, 'apiserver_current_inflight_requests'),
                'executing': msum(m, 'apiserver_flowcontrol_current_executing_requests'),
                'inqueue': msum(m, 'apiserver_flowcontrol_current_inqueue_requests')}

    def ka_lists(self) -> float:
        m = self.apiserver_metrics()
        return msum(m, 'apiserver_request_total', resource='kopfaudits', verb='LIST')

    def start_auditor(self, tag: str) -> Auditor:
        a = Auditor(self.args.auditor, self.args.kubeconfig, self.args.auditor_args,
                    Path(self.args.workdir) / 'results' / f'auditor-{self.args.stamp}-{tag}.log')
        self.auditor = a
        return a

    def wait_synced(self, a: Auditor, timeout: float = 600) -> dict[str, Any]:
        """Polls /readyz every 0.1 s; notes when it first answered 200 and when the log
        said 'caches synced'."""
        ready_at = None
        t_end = a.started + timeout
        while now_s() < t_end:
            if ready_at is None and a.ready():
                ready_at = now_s()
            if ready_at is not None and 'caches synced' in a.seen:
                break
            if a.proc.poll() is not None:
                raise RuntimeError(f'auditor exited with {a.proc.returncode}; see {a.logfile}')
            time.sleep(0.1)
        synced = a.seen.get('caches synced')
        out = {'readyz_ok_s': round(ready_at - a.started, 2) if ready_at else None,
               'caches_synced_s': round(synced - a.started, 2) if synced else None}
        out['readyz_before_synced'] = bool(ready_at and (not synced or ready_at + 0.05 < synced))
        return out

    def window(self, seconds: float, fast: bool = False, change: Any = None) -> dict[str, Any]:
        """Counters, CPU, RSS over a window; with fast=True also connections (20 Hz),
        the API server's in-flight requests and the auditor's own gauge (1 Hz). `change`
        is made after every baseline is taken: with thousands of audits a /metrics
        scrape takes long enough for a re-run to land in a baseline taken after it."""
        a = self.auditor
        assert a
        c0, m0 = self.cpu(), counters(a.metrics())
        e0 = a.errors
        ch0 = dict(self.watch.changed) if self.watch else {}
        t0 = now_s()
        samplers: list[Sampler] = []
        if fast:
            conn = Sampler(0.05, lambda: connections(a.pid, self.api_port))
            infl = Sampler(1.0, self.inflight)
            own = Sampler(0.5, lambda: counters(a.metrics())['in_flight'])
            runs = Sampler(2.0, lambda: last_audits(a.metrics()))
            samplers = [conn, infl, own, runs]
            runs_before = last_audits(a.metrics())
            for s in samplers:
                s.start()
        if change:
            change()
        time.sleep(seconds)
        t1 = now_s()
        c1, m1 = self.cpu(), counters(a.metrics())
        for s in samplers:
            s.halt.set()
        out: dict[str, Any] = {'counters': delta(m0, m1), 'cpu': self.cpu_delta(c0, c1),
                               'log_errors': a.errors - e0}
        if self.watch:
            out['status_fields_changed'] = changed_counts(ch0, self.watch.changed)
        rss = [v for v in self.rss.between(t0, t1) if v[0] == a.pid]
        if rss:
            out['rss_kib_end'] = rss[-1][1]
            out['rss_kib_max'] = max(v[1] for v in rss)
            out['hwm_kib'] = rss[-1][2]
        if fast:
            cs = [v for _, v in conn.samples]
            out['connections_peak'] = max(cs) if cs else None
            out['connections_samples'] = len(cs)
            inf = [v for _, v in infl.samples]
            out['apiserver_inflight_peak'] = max((v['inflight'] for v in inf), default=None)
            out['apiserver_executing_peak'] = max((v['executing'] for v in inf), default=None)
            out['apiserver_inqueue_peak'] = max((v['inqueue'] for v in inf), default=None)
            ow = [v for _, v in own.samples if v is not None]
            out['auditor_in_flight_peak'] = max(ow) if ow else 'not exposed'
            extra = off_schedule(runs_before, [v for _, v in runs.samples], parse_duration(self.args.interval))
            out['audits_off_schedule'] = len(extra)
            out['audits_off_schedule_names'] = extra[:20]
            related = sorted({f'{audit} ({obj})' for when, obj, audit in a.related_reruns if t0 <= when <= t1})
            out['audits_rerun_logged'] = len(related)
            out['audits_rerun_logged_names'] = related[:20]
        return out

    # --------------------------------------------------------------- phases

    def run(self, fixtures: list[tuple[str, str, Any, Path]], pods: dict[str, list[str]]) -> None:
        if self.args.cluster_audit:
            self.run_cluster(fixtures, pods)
            return
        args, res, kube = self.args, self.res, self.kube
        self.delete_audits()
        watch = AuditWatch(kube)
        watch.start()
        self.watch = watch
        appender = LogAppender(self.plan.targets)
        churn = EventChurn(kube, self.plan, self.plan.events / 3600.0, pods)
        audits = [(t.ns, t.name) for t in self.plan.targets]
        for name, ns, _, _ in fixtures:
            d = next(iter(kube.list(f'/apis/apps/v1/namespaces/{ns}/deployments')))
            audits.append((ns, d['metadata']['name']))
        n = len(audits)
        res['audits'] = n
        res['load_before'] = open('/proc/loadavg').read().split()[:3]

        # 1. At rest: caches synced, no KopfAudit.
        a = self.start_auditor('1')
        appender.start()
        churn.start()
        res['start'] = self.wait_synced(a)
        log(f"auditor ready: {res['start']}; resting 30 s")
        rest = self.window(30)
        res['rest'] = rest
        log(f"at rest: RSS {mib(rest.get('rss_kib_end'))}, requests in 30 s: {rest['counters']['requests']}")

        # 2. N KopfAudits created.
        log(f'creating {n} KopfAudits (interval {args.interval})')
        c0, m0, cpu0, e0 = now_s(), counters(a.metrics()), self.cpu(), a.errors
        ch0 = dict(watch.changed)
        parallel(lambda x: kube.create(f'{KA}/namespaces/{x[0]}/kopfaudits', gen.kopf_audit(x[0], x[1], args.interval)),
                 audits, args.workers, 'KopfAudits', log=log)
        created = now_s()
        last_log = 0.0
        deadline = created + args.ready_timeout
        while now_s() < deadline:
            snap = [o for o in watch.snapshot() if o['created'] >= c0 - 5]
            ready = sum(1 for o in snap if o['ready_at'])
            if now_s() - last_log > 10:
                log(f'KopfAudits Ready: {ready}/{n} after {now_s() - c0:.0f}s')
                last_log = now_s()
            if ready >= n:
                break
            time.sleep(1)
        snap = [o for o in watch.snapshot() if o['created'] >= c0 - 5]
        ready_times = sorted(o['ready_at'] - c0 for o in snap if o['ready_at'])
        cr: dict[str, Any] = {'created_in_s': round(created - c0, 1), 'ready': len(ready_times), 'of': n}
        if ready_times:
            cr['all_ready_s'] = round(ready_times[-1], 1) if len(ready_times) >= n else None
            cr['half_ready_s'] = round(ready_times[len(ready_times) // 2], 1)
            cr['p90_ready_s'] = round(ready_times[int(len(ready_times) * 0.9) - 1 if len(ready_times) > 1 else 0], 1)
        log(f'creation: {cr}; settling {args.settle} s')
        time.sleep(args.settle)
        m1 = counters(a.metrics())
        cr['counters'] = delta(m0, m1)
        cr['cpu'] = self.cpu_delta(cpu0, self.cpu())
        cr['log_errors'] = a.errors - e0
        cr['status_fields_changed'] = changed_counts(ch0, watch.changed)
        cr['log_error_kinds'] = dict(sorted(a.error_kinds.items(), key=lambda x: -x[1])[:4])
        snap = [o for o in watch.snapshot() if o['created'] >= c0 - 5]
        writes = [len(o['writes']) for o in snap]
        cr['status_changes_seen'] = sum(writes)
        cr['audits_written_3_or_more_times'] = sum(1 for x in writes if x >= 3)
        heads = self.headline_events({o['uid'] for o in snap})
        cr.update(heads)
        rss = [v for v in self.rss.between(c0, now_s()) if v[0] == a.pid]
        cr['rss_kib_after_ready'] = rss[-1][1] if rss else None
        res['create'] = cr
        log(f"after creation: headline Events {heads['headline_events']} for {n} audits "
            f"({heads['audits_with_duplicate_headlines']} with more than one), status writes "
            f"{cr['counters']['status_writes']}, RSS {mib(cr['rss_kib_after_ready'])}")

        # 3. Steady state.
        steady = args.steady
        log(f'steady window: {steady} s (log appends {sum(t.rate for t in self.plan.targets):.0f} B/s in total)')
        app0 = dict(appender.appended)
        st = self.window(steady)
        app1 = dict(appender.appended)
        st['log'] = self.log_figures(app0, app1, steady)
        res['steady'] = st
        log(f"steady: {st['counters']}, RSS {mib(st.get('rss_kib_end'))}")

        # 4. Herds.
        if not args.steady_only:
            self.quiet()
        for key, role in [] if args.steady_only else (('herd_view', 'view'), ('herd_one', 'scale-op-0000')):
            log(f'label change on ClusterRole {role}; watching 60 s')
            a0 = counters(a.metrics())['audits']
            h = self.window(60, fast=True, change=lambda role=role: kube.patch(
                f'/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}',
                {'metadata': {'labels': {'scale.kopf-audit.dev/touched': str(int(now_s()))}}}))
            h['clusterrole'] = role
            q = self.quiet()
            h['audits_until_quiet'] = int(counters(a.metrics())['audits'] - a0)
            h['until_quiet_s'] = round(q + 60, 1)
            res[key] = h
            log(f"{key}: audits {h['counters']['audits']}, requests {h['counters']['requests_total']}, "
                f"connections peak {h['connections_peak']}, API server in-flight peak {h['apiserver_inflight_peak']}")

        # 5. Optional: every KopfAudit at interval 30s.
        if args.fast_seconds > 0 and not args.steady_only:
            log(f'interval 30s for every KopfAudit; measuring {args.fast_seconds} s')
            parallel(lambda x: kube.patch(f'{KA}/namespaces/{x[0]}/kopfaudits/{x[1]}', {'spec': {'interval': '30s'}}),
                     audits, args.workers, 'interval 30s', log=log)
            time.sleep(60)
            f = self.window(args.fast_seconds)
            rss = [v for v in self.rss.between(now_s() - args.fast_seconds, now_s()) if v[0] == a.pid]
            if len(rss) > 10:
                f['rss_growth_kib_per_min'] = round((rss[-1][1] - rss[0][1]) / (args.fast_seconds / 60), 1)
            res['fast'] = f
            log(f"interval 30s: {f['counters']}, RSS {mib(f.get('rss_kib_end'))}")
            parallel(lambda x: kube.patch(f'{KA}/namespaces/{x[0]}/kopfaudits/{x[1]}', {'spec': {'interval': args.interval}}),
                     audits, args.workers, f'interval {args.interval}', log=log)
            time.sleep(30)
            self.quiet()

        res['rss_peak_kib'] = max((v[2] or 0 for _, v in self.rss.samples if v[0] == a.pid), default=None)
        # 6. SIGTERM at rest, restart, time until every audit ran again.
        res['stop_calm'] = a.stop()
        if args.steady_only:
            self.auditor = None
            res['findings'] = self.findings(watch.snapshot())
            res['load_after'] = open('/proc/loadavg').read().split()[:3]
            res['event_churn_created'] = churn.created
            for th in (watch, appender, churn, self.rss):
                th.halt.set()
            return
        lists0 = self.ka_lists()
        a = self.start_auditor('2')
        rs = self.wave(a, n, args.restart_timeout, until=n, lists0=lists0)
        res['restart'] = rs
        log(f'restart: {rs}')
        res['stop_after_restart'] = a.stop()
        # 7. Another restart, SIGTERM in the middle of the wave.
        a = self.start_auditor('3')
        w3 = self.wave(a, n, args.mid_wave_after, until=n / 2)
        w3['audits_at_sigterm'] = w3['audits_done']
        w3['sigterm_after_s'] = round(now_s() - a.started, 1)
        w3.update(a.stop())
        res['stop_mid_wave'] = w3
        log(f'SIGTERM mid-wave: {w3}')
        self.auditor = None

        res['findings'] = self.findings(watch.snapshot())
        res['load_after'] = open('/proc/loadavg').read().split()[:3]
        res['event_churn_created'] = churn.created
        for th in (watch, appender, churn, self.rss):
            th.halt.set()

    # ------------------------------------------------- ClusterKopfAudit mode

    def run_cluster(self, fixtures: list[tuple[str, str, Any, Path]], pods: dict[str, list[str]]) -> None:
        """--cluster-audit: no KopfAudit is written by the bench; one ClusterKopfAudit with
        no selector (spec.defaults.interval = --interval) discovers the operators and
        generates a KopfAudit for each. The same rest and steady windows as the declared
        run; the herds, the 30s interval and the restarts are not run."""
        args, res, kube = self.args, self.res, self.kube
        res['mode'] = 'cluster-audit'
        self.delete_cluster_audits()
        self.delete_audits()
        watch = AuditWatch(kube)
        watch.start()
        self.watch = watch
        appender = LogAppender(self.plan.targets)
        churn = EventChurn(kube, self.plan, self.plan.events / 3600.0, pods)
        expected = {(t.ns, t.name) for t in self.plan.targets}
        for name, ns, _, _ in fixtures:
            d = next(iter(kube.list(f'/apis/apps/v1/namespaces/{ns}/deployments')))
            expected.add((ns, d['metadata']['name']))
        n = len(expected)
        res['audits'] = n
        res['load_before'] = open('/proc/loadavg').read().split()[:3]

        # 1. At rest: caches synced, no KopfAudit, no ClusterKopfAudit.
        a = self.start_auditor('cka')
        appender.start()
        churn.start()
        res['start'] = self.wait_synced(a)
        log(f"auditor ready: {res['start']}; resting 30 s")
        rest = self.window(30)
        res['rest'] = rest
        log(f"at rest: RSS {mib(rest.get('rss_kib_end'))}, requests in 30 s: {rest['counters']['requests']}")

        # 2. One ClusterKopfAudit; wait for a Ready KopfAudit per operator.
        log(f'creating ClusterKopfAudit {CKA_NAME} (no selector, interval {args.interval}); expecting {n} operators')
        c0, m0, cpu0, e0 = now_s(), counters(a.metrics()), self.cpu(), a.errors
        lists0 = self.cluster_deployment_lists()
        ch0 = dict(watch.changed)
        kube.create(f'{KA}/clusterkopfaudits', {
            'apiVersion': 'kopfaudit.dev/v1alpha1', 'kind': 'ClusterKopfAudit',
            'metadata': {'name': CKA_NAME}, 'spec': {'defaults': {'interval': args.interval}}})
        last_log = 0.0
        deadline = c0 + args.ready_timeout
        while now_s() < deadline:
            gen_ = self.generated(watch)
            ready = sum(1 for o in gen_ if o['ready_at'])
            if now_s() - last_log > 10:
                log(f'generated KopfAudits: {len(gen_)}, Ready {ready}/{n} after {now_s() - c0:.0f}s')
                last_log = now_s()
            if ready >= n:
                break
            time.sleep(1)
        gen_ = self.generated(watch)
        ready_times = sorted(o['ready_at'] - c0 for o in gen_ if o['ready_at'])
        made = sorted(o['created'] - c0 for o in gen_)
        cr: dict[str, Any] = {'generated': len(gen_), 'ready': len(ready_times), 'of': n,
                              'first_generated_s': round(made[0], 1) if made else None,
                              'all_generated_s': round(made[-1], 1) if len(made) >= n else None}
        if ready_times:
            cr['all_ready_s'] = round(ready_times[-1], 1) if len(ready_times) >= n else None
            cr['half_ready_s'] = round(ready_times[len(ready_times) // 2], 1)
            cr['p90_ready_s'] = round(ready_times[int(len(ready_times) * 0.9) - 1 if len(ready_times) > 1 else 0], 1)
        rss = [v for v in self.rss.between(c0, now_s()) if v[0] == a.pid]
        cr['rss_kib_all_ready'] = rss[-1][1] if rss else None
        log(f'creation: {cr}; settling {args.settle} s')
        time.sleep(args.settle)
        m1 = counters(a.metrics())
        cr['counters'] = delta(m0, m1)
        cr['cluster_deployment_lists'] = int(self.cluster_deployment_lists() - lists0)
        cr['cpu'] = self.cpu_delta(cpu0, self.cpu())
        cr['log_errors'] = a.errors - e0
        cr['log_error_kinds'] = dict(sorted(a.error_kinds.items(), key=lambda x: -x[1])[:4])
        cr['status_fields_changed'] = changed_counts(ch0, watch.changed)
        gen_ = self.generated(watch)
        writes = [len(o['writes']) for o in gen_]
        cr['status_changes_seen'] = sum(writes)
        cr['audits_written_3_or_more_times'] = sum(1 for x in writes if x >= 3)
        cr.update(self.headline_events({o['uid'] for o in gen_}))
        got = {(o['ns'], o['target'] or o['name']) for o in gen_}
        noise_ns = set(self.plan.noise_ns)
        cr['missing'] = sorted(f'{ns}/{d}' for ns, d in expected - got)[:20]
        cr['missing_count'] = len(expected - got)
        cr['unexpected'] = sorted(f'{ns}/{d}' for ns, d in got - expected)[:20]
        cr['unexpected_count'] = len(got - expected)
        cr['noise_generated'] = sum(1 for ns, _ in got if ns in noise_ns)
        cr['discovery_passes'] = self.discoveries(a, c0, now_s())
        rss = [v for v in self.rss.between(c0, now_s()) if v[0] == a.pid]
        cr['rss_kib_after_ready'] = rss[-1][1] if rss else None
        cr['cluster_audit'] = self.cluster_audit_status()
        res['create'] = cr
        log(f"after the ClusterKopfAudit: {cr['generated']} generated ({cr['missing_count']} missing, "
            f"{cr['unexpected_count']} unexpected, {cr['noise_generated']} for noise), "
            f"status {cr['cluster_audit'].get('summary')}, RSS {mib(cr['rss_kib_after_ready'])}")

        # 3. Steady state (at least one discovery pass falls in it: it runs every interval).
        steady = args.steady
        log(f'steady window: {steady} s')
        app0 = dict(appender.appended)
        t0 = now_s()
        l0 = self.cluster_deployment_lists()
        st = self.window(steady)
        st['cluster_deployment_lists'] = int(self.cluster_deployment_lists() - l0)
        st['discovery_passes'] = self.discoveries(a, t0, now_s())
        app1 = dict(appender.appended)
        st['log'] = self.log_figures(app0, app1, steady)
        st['cluster_audit'] = self.cluster_audit_status()
        res['steady'] = st
        log(f"steady: {st['counters']}, RSS {mib(st.get('rss_kib_end'))}, discovery passes {st['discovery_passes']}")
        res['rss_peak_kib'] = max((v[2] or 0 for _, v in self.rss.samples if v[0] == a.pid), default=None)
        # When the RSS moved against when discovery ran (s after the auditor started).
        res['rss_samples'] = [(round(t - a.started, 1), v[1]) for t, v in self.rss.samples if v and v[0] == a.pid]
        res['discovery_times'] = [round(t - a.started, 1) for t, _ in a.discoveries]
        res['stop_calm'] = a.stop()
        self.auditor = None
        res['findings'] = self.findings(watch.snapshot())
        res['load_after'] = open('/proc/loadavg').read().split()[:3]
        res['event_churn_created'] = churn.created
        for th in (watch, appender, churn, self.rss):
            th.halt.set()
        self.delete_cluster_audits()

    @staticmethod
    def generated(watch: AuditWatch) -> list[dict[str, Any]]:
        return [o for o in watch.snapshot() if o['labels'].get(CKA_LABEL) == CKA_NAME]

    @staticmethod
    def discoveries(a: Auditor, t0: float, t1: float) -> list[dict[str, Any]]:
        """The discovery passes the auditor logged between t0 and t1, their figures."""
        keep = ('discovered', 'apply', 'delete', 'remembered', 'fingerprints', 'log_decided')
        return [{k: f.get(k) for k in keep if k in f} for t, f in a.discoveries if t0 <= t <= t1]

    def cluster_deployment_lists(self) -> float:
        """The API server's count of cluster-wide Deployment LISTs (discovery's pages; the
        audits list Deployments in their namespace)."""
        return msum(self.apiserver_metrics(), 'apiserver_request_total', resource='deployments', verb='LIST',
                    scope='cluster')

    def cluster_audit_status(self) -> dict[str, Any]:
        try:
            st = self.kube.get(f'{KA}/clusterkopfaudits/{CKA_NAME}').get('status') or {}
        except ApiError as e:
            return {'error': str(e)[:200]}
        return {'summary': st.get('summary'),
                'conditions': {c.get('type'): f"{c.get('status')} {c.get('reason')}" for c in st.get('conditions') or []},
                'worst_offenders': len(st.get('worstOffenders') or [])}

    def delete_cluster_audits(self) -> None:
        """No ClusterKopfAudit from an earlier run (its generated KopfAudits go with it:
        delete_audits deletes what the garbage collector has not yet)."""
        try:
            existing = list(self.kube.list(f'{KA}/clusterkopfaudits'))
        except ApiError:
            return
        for o in existing:
            self.kube.delete(f"{KA}/clusterkopfaudits/{o['metadata']['name']}")
        while existing and list(self.kube.list(f'{KA}/clusterkopfaudits', limit=10)):
            time.sleep(1)

    def wave(self, a: Auditor, n: int, timeout: float, until: float, lists0: float | None = None) -> dict[str, Any]:
        """A freshly started auditor: polls /readyz (10 Hz) and its counters (1 Hz) until
        `until` audits ran or `timeout` s passed; notes when /readyz first said 200 and
        when the log said 'caches synced'."""
        t0 = a.started
        ready_at = done_at = None
        last_log = last_m = 0.0
        au = 0.0
        out: dict[str, Any] = {}
        while now_s() < t0 + timeout:
            if ready_at is None and a.ready():
                ready_at = now_s()
            if now_s() - last_m >= 1:
                last_m = now_s()
                au = counters(a.metrics())['audits']
                if au >= until:
                    done_at = now_s()
                    break
            if lists0 is not None and 'kopfaudit_lists_15s' not in out and now_s() - t0 >= 15:
                out['kopfaudit_lists_15s'] = int(self.ka_lists() - lists0)
            if now_s() - last_log > 10:
                log(f'after start: {au:.0f}/{n} audits in {now_s() - t0:.0f}s, /readyz '
                    f'{"200" if ready_at else "not yet"}, caches synced {"yes" if "caches synced" in a.seen else "not logged"}')
                last_log = now_s()
            if a.proc.poll() is not None:
                break
            time.sleep(0.1)
        synced = a.seen.get('caches synced')
        m = counters(a.metrics())
        out.update({'readyz_ok_s': round(ready_at - t0, 2) if ready_at else None,
                    'caches_synced_s': round(synced - t0, 2) if synced else None,
                    'readyz_before_synced': bool(ready_at and (not synced or ready_at + 0.05 < synced)),
                    'audits_done': int(m['audits']),
                    'all_audited_s': round(done_at - t0, 1) if done_at and until >= n else None,
                    'window_s': round(now_s() - t0, 1),
                    'requests': int(sum(m['requests'].values()))})
        if lists0 is not None:
            out['kopfaudit_lists'] = int(self.ka_lists() - lists0)
        return out

    def quiet(self, max_wait: float = 120) -> float:
        """Waits until no audit ran for 10 s (or max_wait); returns the seconds waited."""
        a = self.auditor
        assert a
        t0 = now_s()
        last = counters(a.metrics())['audits']
        calm_since = now_s()
        while now_s() - t0 < max_wait:
            time.sleep(2)
            cur = counters(a.metrics())['audits']
            if cur != last:
                last, calm_since = cur, now_s()
            elif now_s() - calm_since >= 10:
                log(f'quiet after {now_s() - t0:.0f} s')
                return now_s() - t0
        log(f'not quiet after {max_wait:.0f} s: going on')
        return now_s() - t0

    def delete_audits(self) -> None:
        """No KopfAudit and none of their Events from an earlier run (the audits read the
        Events of their namespaces)."""
        existing = list(self.kube.list(f'{KA}/kopfaudits'))
        nss = sorted({o['metadata']['namespace'] for o in existing}
                     | {e['metadata']['namespace'] for e in self.kube.list(
                         '/api/v1/events', params={'fieldSelector': 'involvedObject.kind=KopfAudit'})})
        if nss:
            parallel(lambda ns: self.kube.request('DELETE', f'/api/v1/namespaces/{ns}/events?fieldSelector='
                                                  + urllib.parse.quote('involvedObject.kind=KopfAudit')),
                     nss, self.args.workers, 'deleting earlier KopfAudits\' Events', log=log)
        if not existing:
            return
        parallel(lambda o: self.kube.delete(f"{KA}/namespaces/{o['metadata']['namespace']}/kopfaudits/{o['metadata']['name']}"),
                 existing, self.args.workers, 'deleting earlier KopfAudits', log=log)
        while list(self.kube.list(f'{KA}/kopfaudits', limit=10)):
            time.sleep(1)

    def headline_events(self, uids: set[str]) -> dict[str, Any]:
        per: dict[str, list[tuple[str, str]]] = {}
        for e in self.kube.list('/api/v1/events', params={'fieldSelector': 'involvedObject.kind=KopfAudit'}):
            if e.get('reportingComponent') != CONTROLLER or e.get('reason') not in HEADLINES:
                continue
            key = e['involvedObject'].get('uid')
            if key not in uids:
                continue
            t = e.get('eventTime') or e.get('lastTimestamp') or e['metadata']['creationTimestamp']
            per.setdefault(key, []).append((t, e['reason']))
        total = sum(len(v) for v in per.values())
        return {'headline_events': total, 'audits_with_headline': len(per),
                'audits_with_duplicate_headlines': sum(1 for v in per.values() if len(v) > 1),
                'headline_reasons': {r: sum(1 for v in per.values() for _, x in v if x == r) for r in sorted(HEADLINES)}}

    def log_figures(self, app0: dict[str, int], app1: dict[str, int], seconds: float) -> dict[str, Any]:
        """Bytes each audit is served (the window's bytes, capped at limitBytes, from the
        files) against the bytes its operator wrote in one interval."""
        interval = parse_duration(self.args.interval)
        now_ns = time.time_ns()
        served, written = [], []
        for t in self.plan.targets:
            if not t.log_file:
                continue
            served.append(gen.window_bytes(t.log_file, now_ns))
            written.append((app1.get(t.ns, 0) - app0.get(t.ns, 0)) * interval / seconds)
        if not served:
            return {}
        served.sort()
        written.sort()
        return {'served_per_audit_mean_kib': round(sum(served) / len(served) / 1024, 1),
                'served_per_audit_median_kib': round(served[len(served) // 2] / 1024, 1),
                'served_per_audit_max_kib': round(served[-1] / 1024, 1),
                'served_capped_at_limit': sum(1 for s in served if s >= gen.LIMIT_BYTES),
                'written_per_interval_mean_kib': round(sum(written) / len(written) / 1024, 1),
                'written_per_interval_median_kib': round(written[len(written) // 2] / 1024, 1),
                'served_over_written': round(sum(served) / max(sum(written), 1), 2)}

    def findings(self, snap: list[dict[str, Any]]) -> dict[str, Any]:
        by_ns = {t.ns: t for t in self.plan.targets}
        checks: dict[str, int] = {}
        noise = {'own': 0, 'noise': 0, 'own_targets': 0, 'noise_targets': 0}
        noise_checks: dict[str, int] = {}
        for o in snap:
            fs = [f.get('check') for f in ((o.get('status') or {}).get('findings') or [])]
            for c in fs:
                checks[c] = checks.get(c, 0) + 1
            t = by_ns.get(o['ns'])
            if not t or t.events != 'quiet':
                continue
            k = 'own' if t.scope == 'own' else 'noise'
            noise[f'{k}_targets'] += 1
            for c in fs:
                if c in NOISE_EVENT_CHECKS:
                    noise[k] += 1
                    if k == 'noise':
                        noise_checks[c] = noise_checks.get(c, 0) + 1
        return {'by_check': dict(sorted(checks.items(), key=lambda x: -x[1])),
                'quiet_targets_own_scope': noise['own_targets'],
                'noise_findings_own_scope': noise['own'],
                'quiet_targets_serving_noise': noise['noise_targets'],
                'noise_findings_serving_noise': noise['noise'],
                'noise_findings_by_check': noise_checks}


def parse_duration(s: str) -> float:
    total = 0.0
    for num, unit in re.findall(r'(\d+(?:\.\d+)?)(h|ms|m|s)', s):
        total += float(num) * {'h': 3600, 'm': 60, 's': 1, 'ms': 0.001}[unit]
    return total or 300.0


# ------------------------------------------------------------------ report

def summary(res: dict[str, Any]) -> str:
    L: list[str] = []

    def line(what: str, value: Any) -> None:
        L.append(f'{what:<72} {value}')

    sc = res['scale']
    L.append(f"scale: {sc['pods']} pods in {sc['deployments']} Deployments across {sc['namespaces']} namespaces, "
             f"{sc['events']} Events, {sc['audits']} targets + {len(res.get('fixtures', []))} kopf fixtures, "
             f"interval {sc['interval']}; auditor {res['auditor']} {' '.join(res['auditor_args'])}")
    L.append(f"machine: {res['machine']}; load average before {' '.join(res.get('load_before', []))}, "
             f"after {' '.join(res.get('load_after', []))}")
    s = res.get('setup', {})
    if 'pods_running_s' in s:
        line('setup: pods created and Running (s)', f"{s['pods_running_s']} ({s['pods']} pods, {s['pods_per_s']}/s)")
    if 'objects_s' in s:
        line('setup: Deployments, RBAC, handled objects created (s)', s['objects_s'])
    if 'logs' in res:
        lg = res['logs']
        line('setup: kopf logs (files, total, median, max)',
             f"{lg['files']}, {lg['total_mib']} MiB, {lg['median_kib']} KiB, {lg['max_kib']} KiB")
    line('Events in the cluster at the start', res.get('events_present'))
    st = res.get('start', {})
    line('start: caches synced / first /readyz 200 (s after start)', f"{st.get('caches_synced_s')} / {st.get('readyz_ok_s')}")
    r = res.get('rest', {})
    line('RSS at rest, caches synced, no KopfAudit', mib(r.get('rss_kib_end')))
    c = res.get('create', {})
    line('KopfAudits created (N)', res.get('audits'))
    line('time from KopfAudits created to all Ready (s)', c.get('all_ready_s') if c.get('all_ready_s') is not None
         else f"not all: {c.get('ready')}/{c.get('of')}")
    line('  half / 90% Ready (s)', f"{c.get('half_ready_s')} / {c.get('p90_ready_s')}")
    line('RSS after the N audits are Ready', mib(c.get('rss_kib_after_ready')))
    cc = c.get('counters', {})
    line(f"creation wave (until {res['settle']} s after): status writes (expected <= 2N)", cc.get('status_writes'))
    line('creation wave: status changes seen by a watch', c.get('status_changes_seen'))
    line('creation wave: audits whose status was written 3+ times', c.get('audits_written_3_or_more_times'))
    line('creation wave: headline Events (expected N)', f"{c.get('headline_events')} {c.get('headline_reasons')}")
    line('creation wave: audits with more than one headline Event', c.get('audits_with_duplicate_headlines'))
    line('creation wave: API requests', f"{cc.get('requests_total')} {cc.get('requests')}")
    line('creation wave: API server CPU (s)', (c.get('cpu') or {}).get('apiserver_cpu_s'))
    stdy = res.get('steady', {})
    if stdy:
        sc2 = stdy['counters']
        mins = stdy['cpu']['seconds'] / 60
        line(f"steady window (s)", stdy['cpu']['seconds'])
        line('steady: audits', sc2['audits'])
        line('steady: API requests per minute (not watches)', round(sc2['requests_total'] / mins))
        line('steady: by verb per minute', {k: round(v / mins) for k, v in sc2['requests'].items()})
        if sc2['audits']:
            line('steady: API requests per audit', round(sc2['requests_total'] / sc2['audits'], 1))
            line('steady: by verb per audit', {k: round(v / sc2['audits'], 1) for k, v in sc2['requests'].items()})
        if sc2.get('responses'):
            line('steady: by verb and resource', sc2['responses'])
        line('steady: watches opened', sc2['watches'])
        line('steady: status writes', sc2['status_writes'])
        if stdy.get('status_fields_changed'):
            line('steady: status fields the writes changed (watch)', dict(list(stdy['status_fields_changed'].items())[:6]))
        line('steady: mean audit duration (s)', sc2.get('mean_audit_s'))
        line('steady: RSS at the end / max in the window', f"{mib(stdy.get('rss_kib_end'))} / {mib(stdy.get('rss_kib_max'))}")
        line('steady: API server CPU (cores)', stdy['cpu'].get('apiserver_cores'))
        line('steady: auditor CPU (cores)', stdy['cpu'].get('auditor_cores'))
        lg = stdy.get('log', {})
        line('steady: log bytes read per audit (kopf_audit_log_bytes_read_total)',
             f"{round(sc2['log_bytes'] / max(sc2['audits'], 1) / 1024, 1)} KiB" if 'log_bytes' in sc2 else 'not exposed')
        if lg:
            line('steady: log bytes served per audit (window, <= limitBytes; mean/median/max)',
                 f"{lg['served_per_audit_mean_kib']} / {lg['served_per_audit_median_kib']} / {lg['served_per_audit_max_kib']} KiB")
            line('steady: bytes each operator wrote per interval (mean/median)',
                 f"{lg['written_per_interval_mean_kib']} / {lg['written_per_interval_median_kib']} KiB")
            line('steady: served / written', lg['served_over_written'])
    for key, what in (('herd_view', 'ClusterRole view (unrelated)'), ('herd_one', 'ClusterRole of one operator')):
        h = res.get(key)
        if not h:
            continue
        hc = h['counters']
        line(f'herd, {what}: audits run in 60 s (scheduled and re-run)', hc['audits'])
        if 'audits_off_schedule' in h:
            line(f'herd, {what}: audits re-run by the change (off their schedule)',
                 f"{h['audits_off_schedule']} {h.get('audits_off_schedule_names', [])}")
        if 'audits_rerun_logged' in h:
            line(f'herd, {what}: audits the auditor logged as re-run by a related object',
                 f"{h['audits_rerun_logged']} {h.get('audits_rerun_logged_names', [])}")
        line(f'herd, {what}: audits until quiet (s)', f"{h.get('audits_until_quiet')} in {h.get('until_quiet_s')} s")
        line(f'herd, {what}: API requests in 60 s', f"{hc['requests_total']} {hc['requests']}")
        line(f'herd, {what}: peak connections auditor -> API server', h.get('connections_peak'))
        line(f'herd, {what}: peak API server in-flight (inflight/executing)',
             f"{h.get('apiserver_inflight_peak')} / {h.get('apiserver_executing_peak')}")
        line(f'herd, {what}: peak auditor in-flight gauge', h.get('auditor_in_flight_peak'))
        line(f'herd, {what}: API server CPU (s in 60 s)', h['cpu'].get('apiserver_cpu_s'))
        line(f'herd, {what}: status writes', hc['status_writes'])
    f = res.get('fast')
    if f:
        fc = f['counters']
        mins = f['cpu']['seconds'] / 60
        line('interval 30s: API requests per minute', round(fc['requests_total'] / mins))
        line('interval 30s: audits per minute', round(fc['audits'] / mins))
        line('interval 30s: RSS at the end / growth per minute',
             f"{mib(f.get('rss_kib_end'))} / {f.get('rss_growth_kib_per_min')} KiB")
        line('interval 30s: status writes', fc['status_writes'])
    line('RSS peak (VmHWM) of the first auditor', mib(res.get('rss_peak_kib')))
    sc3 = res.get('stop_calm', {})
    line('SIGTERM at rest: exit (s)', sc3.get('exit_s') if not sc3.get('killed') else f"still alive after {sc3.get('alive_after_s')} s: killed")
    rs = res.get('restart', {})
    if rs:
        line('restart: caches synced / first /readyz 200 (s)', f"{rs.get('caches_synced_s')} / {rs.get('readyz_ok_s')}")
        line('restart: /readyz 200 before "caches synced"', 'yes' if rs.get('readyz_before_synced') else 'no')
        line('restart: time until every audit ran again (s)', rs.get('all_audited_s') if rs.get('all_audited_s')
             else f"not within {rs.get('window_s')} s: {rs.get('audits_done')}/{res.get('audits')}")
        line('restart: KopfAudit LISTs (API server count)', f"{rs.get('kopfaudit_lists')} in {rs.get('window_s')} s")
    mw = res.get('stop_mid_wave', {})
    if mw:
        line('SIGTERM mid-wave: audits done when sent', f"{mw.get('audits_at_sigterm')} (at {mw.get('sigterm_after_s')} s)")
        line('SIGTERM mid-wave: exit (s)', mw.get('exit_s') if not mw.get('killed') else f"still alive after {mw.get('alive_after_s')} s: killed")
    fd = res.get('findings')
    if fd:
        line('findings: quiet own-namespace targets, noise-type event findings',
             f"{fd['noise_findings_own_scope']} on {fd['quiet_targets_own_scope']} targets")
        line('findings: quiet targets serving noise namespaces, event findings',
             f"{fd['noise_findings_serving_noise']} on {fd['quiet_targets_serving_noise']} targets {fd['noise_findings_by_check']}")
    return '\n'.join(L)


def summary_cluster(res: dict[str, Any]) -> str:
    """The summary of a --cluster-audit run: the figures the declared run's summary has
    for the phases both run, and discovery's."""
    L: list[str] = []

    def line(what: str, value: Any) -> None:
        L.append(f'{what:<72} {value}')

    sc = res['scale']
    L.append(f"scale: {sc['pods']} pods in {sc['deployments']} Deployments across {sc['namespaces']} namespaces, "
             f"{sc['events']} Events, {sc['audits']} targets + {len(res.get('fixtures', []))} kopf fixtures, "
             f"interval {sc['interval']}; auditor {res['auditor']} {' '.join(res['auditor_args'])}")
    L.append('mode: one ClusterKopfAudit, no selector; it generates the KopfAudits')
    L.append(f"machine: {res['machine']}; load average before {' '.join(res.get('load_before', []))}, "
             f"after {' '.join(res.get('load_after', []))}")
    line('Events in the cluster at the start', res.get('events_present'))
    st = res.get('start', {})
    line('start: caches synced / first /readyz 200 (s after start)', f"{st.get('caches_synced_s')} / {st.get('readyz_ok_s')}")
    r = res.get('rest', {})
    line('RSS at rest, caches synced, no KopfAudit, no ClusterKopfAudit', mib(r.get('rss_kib_end')))
    c = res.get('create', {})
    line('operators expected (targets + fixtures)', res.get('audits'))
    line('KopfAudits generated / Ready', f"{c.get('generated')} / {c.get('ready')}")
    line('  missing / unexpected / for noise Deployments',
         f"{c.get('missing_count')} {c.get('missing')} / {c.get('unexpected_count')} {c.get('unexpected')} / "
         f"{c.get('noise_generated')}")
    line('time from ClusterKopfAudit created to first / all generated (s)',
         f"{c.get('first_generated_s')} / {c.get('all_generated_s')}")
    line('time from ClusterKopfAudit created to all Ready (s)', c.get('all_ready_s') if c.get('all_ready_s') is not None
         else f"not all: {c.get('ready')}/{c.get('of')}")
    line('  half / 90% Ready (s)', f"{c.get('half_ready_s')} / {c.get('p90_ready_s')}")
    line('RSS when all are Ready', mib(c.get('rss_kib_all_ready')))
    line(f"RSS {res['settle']} s later", mib(c.get('rss_kib_after_ready')))
    cc = c.get('counters', {})
    line(f"creation wave (until {res['settle']} s after): status writes", cc.get('status_writes'))
    line('creation wave: audits whose status was written 3+ times', c.get('audits_written_3_or_more_times'))
    line('creation wave: headline Events', f"{c.get('headline_events')} {c.get('headline_reasons')}")
    line('creation wave: API requests', f"{cc.get('requests_total')} {cc.get('requests')}")
    line('creation wave: by verb and resource', cc.get('responses'))
    line('creation wave: cluster-wide Deployment LISTs (API server count)', c.get('cluster_deployment_lists'))
    line('creation wave: discovery passes logged', c.get('discovery_passes'))
    line('creation wave: API server CPU (s)', (c.get('cpu') or {}).get('apiserver_cpu_s'))
    line('ClusterKopfAudit status after the wave', c.get('cluster_audit'))
    stdy = res.get('steady', {})
    if stdy:
        sc2 = stdy['counters']
        mins = stdy['cpu']['seconds'] / 60
        n = res.get('audits') or 1
        line('steady window (s)', stdy['cpu']['seconds'])
        line('steady: audits', sc2['audits'])
        line('steady: API requests per minute (not watches)', round(sc2['requests_total'] / mins))
        line('steady: by verb per minute', {k: round(v / mins) for k, v in sc2['requests'].items()})
        if sc2['audits']:
            line('steady: API requests per audit run', round(sc2['requests_total'] / sc2['audits'], 1))
            line('steady: by verb per audit run', {k: round(v / sc2['audits'], 1) for k, v in sc2['requests'].items()})
        per_interval = stdy['cpu']['seconds'] / parse_duration(sc['interval'])
        line('steady: API requests per discovered operator per interval',
             round(sc2['requests_total'] / n / per_interval, 2))
        line('steady: by verb and resource', sc2.get('responses'))
        line('steady: discovery passes logged', stdy.get('discovery_passes'))
        line('steady: cluster-wide Deployment LISTs (API server count)', stdy.get('cluster_deployment_lists'))
        line('steady: watches opened', sc2['watches'])
        line('steady: status writes', sc2['status_writes'])
        line('steady: mean audit duration (s)', sc2.get('mean_audit_s'))
        line('steady: RSS at the end / max in the window', f"{mib(stdy.get('rss_kib_end'))} / {mib(stdy.get('rss_kib_max'))}")
        line('steady: API server CPU (cores)', stdy['cpu'].get('apiserver_cores'))
        line('steady: auditor CPU (cores)', stdy['cpu'].get('auditor_cores'))
        line('ClusterKopfAudit status at the end', stdy.get('cluster_audit'))
    line('RSS peak (VmHWM)', mib(res.get('rss_peak_kib')))
    sc3 = res.get('stop_calm', {})
    line('SIGTERM at rest: exit (s)', sc3.get('exit_s') if not sc3.get('killed') else f"still alive after {sc3.get('alive_after_s')} s: killed")
    line('log errors (kinds)', f"{sc3.get('log_errors')} {sc3.get('log_error_kinds')}")
    return '\n'.join(L)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--kubeconfig', required=True)
    p.add_argument('--workdir', required=True, help='the bench work dir (logs, results)')
    p.add_argument('--cluster-dir', required=True, help="kwokctl's cluster dir (pids of the components)")
    p.add_argument('--fixture-workdir', required=True, help="hack/fixture.py's --workdir (the cluster's)")
    p.add_argument('--auditor', required=True)
    p.add_argument('--auditor-args', default='', help='extra flags for `kopf-audit run`')
    p.add_argument('--auditor-label', default='', help='a name for the binary in the results')
    p.add_argument('--pods', type=int, default=10000)
    p.add_argument('--deployments', type=int, default=2000)
    p.add_argument('--namespaces', type=int, default=50)
    p.add_argument('--events', type=int, default=26000)
    p.add_argument('--audits', type=int, default=1000)
    p.add_argument('--interval', default='5m')
    p.add_argument('--steady', type=float, default=0, help='steady window, s (default: two intervals)')
    p.add_argument('--settle', type=float, default=60, help='s after all Ready before counting the wave')
    p.add_argument('--fast-seconds', type=float, default=0, help='measure every audit at interval 30s for this long')
    p.add_argument('--fixtures', default='good,silent-failures,no-events-create')
    p.add_argument('--workers', type=int, default=16, help='concurrent requests while setting up')
    p.add_argument('--pod-timeout', type=float, default=5400)
    p.add_argument('--ready-timeout', type=float, default=900)
    p.add_argument('--restart-timeout', type=float, default=300)
    p.add_argument('--mid-wave-after', type=float, default=45, help='SIGTERM at N/2 audits or after this many s')
    p.add_argument('--setup-only', action='store_true')
    p.add_argument('--reuse', action='store_true', help='skip the setup when this scale is in place')
    p.add_argument('--steady-only', action='store_true',
                   help='stop after the steady window (no herds, no 30s interval, no restarts)')
    p.add_argument('--cluster-audit', action='store_true',
                   help='one ClusterKopfAudit discovers the operators instead of N declared KopfAudits')
    args = p.parse_args()
    args.auditor_args = args.auditor_args.split()
    if args.cluster_audit and '--cluster-audits' not in args.auditor_args:
        args.auditor_args.append('--cluster-audits')
    args.workdir = str(Path(args.workdir).resolve())  # kwok resolves Logs paths from its own dir
    if args.pods < args.deployments:
        p.error('--pods must be at least --deployments')
    if not args.steady:
        args.steady = 2 * parse_duration(args.interval)
    args.stamp = time.strftime('%Y%m%d-%H%M%S')
    work = Path(args.workdir)
    (work / 'results').mkdir(parents=True, exist_ok=True)
    kube = Kube(args.kubeconfig)
    plan = gen.make_plan(args.pods, args.deployments, args.namespaces, args.events, args.audits)
    scale = {'pods': args.pods, 'deployments': args.deployments, 'namespaces': args.namespaces,
             'events': args.events, 'audits': args.audits, 'interval': args.interval}
    cpu = os.cpu_count()
    mem = next((l.split()[1] for l in open('/proc/meminfo') if l.startswith('MemTotal')), '?')
    res: dict[str, Any] = {'scale': scale, 'auditor': args.auditor_label or args.auditor,
                           'auditor_args': args.auditor_args, 'stamp': args.stamp, 'settle': args.settle,
                           'steady_s': args.steady, 'mode': 'cluster-audit' if args.cluster_audit else 'declared',
                           'machine': f'{cpu} CPUs, {int(mem) // 1024 // 1024} GiB'}
    marker = work / 'scenario.json'
    t0 = now_s()
    noise = ('pods', 'deployments', 'namespaces', 'events')
    placed = json.loads(marker.read_text()).get('scale', {}) if marker.exists() else {}
    # The plan of fewer audits is the first targets of a larger one (same noise, same targets).
    # The marker outlives the cluster's data when the cluster was made anew: count too.
    if placed and count(kube, '/apis/apps/v1/deployments', labelSelector=f'{LABEL}=operator') < args.audits:
        log('the scenario marker is there but the cluster does not hold it: setting it up again')
        placed = {}
    if args.reuse and all(placed.get(k) == scale[k] for k in noise) and args.audits <= placed.get('audits', -1):
        log('the scenario of this scale is in place: redoing logs and Events only')
        pods = finish_setup(kube, plan, args, res)
    else:
        pods = setup(kube, plan, args, res)
        if not (all(placed.get(k) == scale[k] for k in noise) and args.audits <= placed.get('audits', -1)):
            marker.write_text(json.dumps({'scale': {k: v for k, v in scale.items() if k != 'interval'}}))
    res['setup']['total_s'] = round(now_s() - t0, 1)
    fixtures = start_fixtures(args)
    res['fixtures'] = [f[0] for f in fixtures]
    try:
        if not args.setup_only:
            Bench(kube, plan, args, res).run(fixtures, pods)
    finally:
        for _, _, proc, _ in fixtures:
            proc.terminate()
        for _, _, proc, _ in fixtures:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        out = work / 'results' / f'scale-{args.stamp}.json'
        out.write_text(json.dumps(res, indent=1, default=str))
        (work / 'results' / 'latest.json').write_text(json.dumps(res, indent=1, default=str))
        if not args.setup_only and 'create' in res:
            text = summary_cluster(res) if args.cluster_audit else summary(res)
            (work / 'results' / f'scale-{args.stamp}.txt').write_text(text + '\n')
            print(text)
        log(f'results: {out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
