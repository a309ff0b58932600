#!/usr/bin/env python3
"""The auditor's memory at the worst a tenant can configure (BENCHMARKS.md, "Memory at
the worst configuration"); hack/bench-memory.sh runs it.

In one namespace of its own (kwok pods on a tainted kwok node of its own, so nothing
else lands there), it creates N KopfAudits (default 8, the default
--max-concurrent-audits), each with the largest log bounds the schema allows
(`logs.limitBytes: 64Mi`, `logs.window: 24h`), each targeting a Deployment of R kwok
replicas (default 20) whose container logs, current and previous, are a crash loop of
4 KiB ERROR lines with long tracebacks about ever new objects (every record distinct,
so nothing folds into another); and each handling the same custom resource, of which
the namespace holds 50 objects (the most the auditor samples) near the API server's
size bound. Every KopfAudit reads its own copy of all of it, as N tenants would.

Then it runs the auditor binary (`kopf-audit run --watch-namespace NS`), waits for W
waves of N audits while the logs keep growing, samples VmRSS and VmHWM from
/proc/PID/status every 0.25 s, prints the figures and deletes what it created.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kube import ApiError, Kube, log, parallel  # noqa: E402

GROUP = 'bench-mem.kopfaudit.dev'
TAINT = 'kopfaudit.dev/bench-mem'


def kubelet_ts(ns_epoch: int) -> str:
    s, frac = divmod(ns_epoch, 1_000_000_000)
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(s)) + f'.{frac:09d}Z'


class CrashLog:
    """A crash loop: every record a 4 KiB ERROR about a new object, with a traceback of
    `frames` long lines, in kopf's default format, as the kubelet writes it (CRI)."""

    def __init__(self, frames: int) -> None:
        self.frames = frames
        self.n = 0
        self.filler = ''.join(random.Random(7).choice('abcdefghij klmnopqrstuvwxyz') for _ in range(4096))

    def record(self, at_ns: int) -> str:
        self.n += 1
        ts = kubelet_ts(at_ns)
        own = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(at_ns // 10**9)) + ',000'
        i = self.n
        out = [f'{ts} stderr F [{own}] kopf.objects         [ERROR   ] [bench-mem-worst/obj-{i}] '
               f"Handler 'reconcile' failed with an exception and will try again in 60 seconds: "
               f'{self.filler[: 4096 - 100]}\n',
               f'{ts} stderr F Traceback (most recent call last):\n']
        for f in range(self.frames):
            out.append(f'{ts} stderr F   File "/app/operator/handlers/reconcile_{f}.py", line {100 + f}, '
                       f'in step_{f}: {self.filler[f * 7: f * 7 + 400]}\n')
        out.append(f'{ts} stderr F RuntimeError: reconcile of obj-{i} crashed: {self.filler[:300]}\n')
        return ''.join(out)

    def write(self, path: Path, start_ns: int, end_ns: int, size: int) -> int:
        """Records spread evenly from start to end, about `size` bytes."""
        per = len(self.record(start_ns))
        count = max(1, size // per)
        step = (end_ns - start_ns) // count
        n = 0
        with open(path, 'w', encoding='utf-8') as f:
            for k in range(count):
                x = self.record(start_ns + k * step)
                f.write(x)
                n += len(x)
        return n


class Appender(threading.Thread):
    """The operators keep crashing: new distinct records appended to the current log."""

    def __init__(self, path: Path, gen: CrashLog, per_second: int) -> None:
        super().__init__(daemon=True)
        self.path, self.gen, self.per_second = path, gen, per_second
        self.halt = threading.Event()
        self.written = 0

    def run(self) -> None:
        while not self.halt.wait(1.0):
            now = time.time_ns()
            with open(self.path, 'a', encoding='utf-8') as f:
                for k in range(self.per_second):
                    x = self.gen.record(now + k)
                    f.write(x)
                    self.written += len(x)


def status_kib(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f'/proc/{pid}/status', encoding='ascii') as f:
            for line in f:
                k, _, v = line.partition(':')
                if k in ('VmRSS', 'VmHWM'):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def metrics(port: int) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        with urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith('#') or ' ' not in line:
            continue
        name, _, value = line.rpartition(' ')
        base = name.split('{', 1)[0]
        try:
            out[base] = out.get(base, 0.0) + float(value)
        except ValueError:
            pass
    return out


def mib(kib: int | None) -> str:
    return '-' if kib is None else f'{kib / 1024:.1f} MiB'


def setup(kube: Kube, args: argparse.Namespace, logdir: Path) -> None:
    ns = args.namespace
    log(f'node {args.node} (kwok, tainted {TAINT}: only the bench lands there)')
    kube.create('/api/v1/nodes', {
        'apiVersion': 'v1', 'kind': 'Node',
        'metadata': {'name': args.node,
                     'annotations': {'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0'},
                     'labels': {'kubernetes.io/hostname': args.node, 'type': 'kwok', TAINT: 'true'}},
        'spec': {'taints': [{'key': TAINT, 'value': 'true', 'effect': 'NoSchedule'}]},
        'status': {'allocatable': {'cpu': '512', 'memory': '4Ti', 'pods': str(args.audits * args.replicas + 10)},
                   'capacity': {'cpu': '512', 'memory': '4Ti', 'pods': str(args.audits * args.replicas + 10)}},
    })
    kube.create('/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': ns}})
    for _ in range(60):
        try:
            kube.get(f'/api/v1/namespaces/{ns}/serviceaccounts/default')
            break
        except ApiError:
            time.sleep(1)

    # The logs, before the pods exist: kwok serves them from these files.
    gen = CrashLog(args.frames)
    now = time.time_ns()
    current, previous = logdir / 'current.log', logdir / 'previous.log'
    size = gen.write(current, now - 23 * 3600 * 10**9, now - 10**9, args.log_mib * 2**20)
    psize = gen.write(previous, now - 30 * 3600 * 10**9, now - 23 * 3600 * 10**9 - 10**9, args.previous_mib * 2**20)
    log(f'logs: current {size / 2**20:.1f} MiB, previous {psize / 2**20:.1f} MiB, '
        f'{len(gen.record(now))} bytes a record')
    kube.create('/apis/kwok.x-k8s.io/v1alpha1/clusterlogs', {
        'apiVersion': 'kwok.x-k8s.io/v1alpha1', 'kind': 'ClusterLogs',
        'metadata': {'name': args.namespace},
        'spec': {'selector': {'matchNamespaces': [ns]},
                 'logs': [{'containers': ['operator'], 'logsFile': str(current),
                           'previousLogsFile': str(previous), 'follow': True}]},
    })

    # The handled resource, and 50 objects near the size bound.
    crd = f'widgets.{GROUP}'
    kube.create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': crd},
        'spec': {'group': GROUP, 'scope': 'Namespaced',
                 'names': {'plural': 'widgets', 'singular': 'widget', 'kind': 'Widget', 'listKind': 'WidgetList'},
                 'versions': [{'name': 'v1', 'served': True, 'storage': True,
                               'schema': {'openAPIV3Schema': {'type': 'object',
                                                              'x-kubernetes-preserve-unknown-fields': True}}}]},
    })
    for _ in range(60):
        c = kube.get(f'/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}')
        if any(x['type'] == 'Established' and x['status'] == 'True' for x in (c.get('status') or {}).get('conditions') or []):
            break
        time.sleep(1)

    def widget(i: int) -> None:
        kib = args.object_kib
        while True:
            chunk = 64 * 1024
            blobs = {f'blob{j}': ('%06d' % j) * (chunk // 6) for j in range(kib * 1024 // chunk)}
            body = {'apiVersion': f'{GROUP}/v1', 'kind': 'Widget',
                    'metadata': {'name': f'w{i}', 'namespace': ns,
                                 'annotations': {'kopf.zalando.org/last-handled-configuration':
                                                 json.dumps({'spec': {'size': 1}})}},
                    'spec': {'size': 2, **blobs}}
            try:
                kube.create(f'/apis/{GROUP}/v1/namespaces/{ns}/widgets', body)
                return
            except ApiError as e:
                if 'too large' not in e.body and e.status not in (413, 422) or kib <= 256:
                    raise
                kib -= 64
    parallel(widget, list(range(args.objects)), 4, f'{args.objects} Widgets of ~{args.object_kib} KiB', log=log)
    sizes = [len(json.dumps(w)) for w in kube.list(f'/apis/{GROUP}/v1/namespaces/{ns}/widgets', limit=5)]
    log(f'Widgets stored: {len(sizes)}, {min(sizes) // 1024}-{max(sizes) // 1024} KiB each')

    def deployment(i: int) -> None:
        labels = {'app.kubernetes.io/name': f'op-{i}'}
        kube.create(f'/apis/apps/v1/namespaces/{ns}/deployments', {
            'apiVersion': 'apps/v1', 'kind': 'Deployment',
            'metadata': {'name': f'op-{i}', 'namespace': ns, 'labels': labels},
            'spec': {'replicas': args.replicas, 'selector': {'matchLabels': labels},
                     'template': {'metadata': {'labels': labels}, 'spec': {
                         'nodeSelector': {TAINT: 'true'},
                         'tolerations': [{'key': TAINT, 'operator': 'Exists', 'effect': 'NoSchedule'}],
                         'containers': [{'name': 'operator', 'image': 'registry.example.com/bench/op:1.0',
                                         'command': ['kopf'],
                                         'args': ['run', '--standalone', f'--namespace={ns}', '/app/operator.py'],
                                         'resources': {'requests': {'memory': '256Mi'},
                                                       'limits': {'memory': '512Mi'}}}]}}},
        })
    parallel(deployment, list(range(args.audits)), 4, f'{args.audits} Deployments of {args.replicas} replicas', log=log)
    total = args.audits * args.replicas
    start = time.monotonic()
    while True:
        pods = list(kube.list(f'/api/v1/namespaces/{ns}/pods'))
        running = [p for p in pods if (p.get('status') or {}).get('phase') == 'Running']
        if len(running) >= total:
            break
        if time.monotonic() - start > 300:
            raise RuntimeError(f'only {len(running)}/{total} pods Running after 300 s')
        time.sleep(2)
    log(f'{total} pods Running ({time.monotonic() - start:.0f}s)')

    # Every container restarted: its previous log is read too.
    stamp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    def restarted(p: dict[str, Any]) -> None:
        st = {'name': 'operator', 'image': 'registry.example.com/bench/op:1.0', 'imageID': '',
              'ready': True, 'started': True, 'restartCount': 7, 'state': {'running': {'startedAt': stamp}},
              'lastState': {'terminated': {'exitCode': 1, 'reason': 'Error', 'startedAt': stamp,
                                           'finishedAt': stamp}}}
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}/status",
                   {'status': {'containerStatuses': [st]}}, kind='strategic')
    parallel(restarted, running, 8, 'restarted containers', log=log)

    for i in range(args.audits):
        kube.create(f'/apis/kopfaudit.dev/v1alpha1/namespaces/{ns}/kopfaudits', {
            'apiVersion': 'kopfaudit.dev/v1alpha1', 'kind': 'KopfAudit',
            'metadata': {'name': f'audit-{i}', 'namespace': ns},
            'spec': {'target': {'deployment': f'op-{i}'}, 'interval': args.interval,
                     'logs': {'window': '24h', 'limitBytes': '64Mi'},
                     'handledResources': [{'group': GROUP, 'version': 'v1', 'plural': 'widgets'}]},
        })
    log(f'{args.audits} KopfAudits: logs.window 24h, logs.limitBytes 64Mi, interval {args.interval}')
    args.gen = gen
    args.current = current


def teardown(kube: Kube, args: argparse.Namespace) -> None:
    ns = args.namespace
    log(f'deleting namespace {ns}, the node, the ClusterLogs and the CRD')
    kube.delete(f'/api/v1/namespaces/{ns}')
    start = time.monotonic()
    while time.monotonic() - start < 180:
        try:
            kube.get(f'/api/v1/namespaces/{ns}')
        except ApiError as e:
            if e.status == 404:
                break
            raise
        time.sleep(2)
    kube.delete(f'/api/v1/nodes/{args.node}')
    kube.delete(f'/apis/kwok.x-k8s.io/v1alpha1/clusterlogs/{ns}')
    kube.delete(f'/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}')


def measure(kube: Kube, args: argparse.Namespace) -> dict[str, Any]:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    argv = [args.auditor, 'run', '--log-format', 'json', '--log-level', 'warn', '--watch-namespace', args.namespace,
            '--http-addr', f'127.0.0.1:{port}', '--instance', args.namespace, *args.auditor_args.split()]
    logfile = Path(args.workdir) / f'auditor-{args.label_safe}.log'
    env = dict(os.environ, KUBECONFIG=args.kubeconfig)
    prefix = ['prlimit', f'--as={args.as_limit_mib * 2**20}', '--'] if args.as_limit_mib else []
    with open(logfile, 'w') as out:
        proc = subprocess.Popen(prefix + argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    log(f'auditor pid {proc.pid}: {" ".join(prefix + argv)} (log {logfile})')
    samples: list[tuple[float, int, int]] = []
    halt = threading.Event()

    def sample() -> None:
        while not halt.is_set():
            st = status_kib(proc.pid)
            if 'VmRSS' in st:
                samples.append((time.monotonic(), st['VmRSS'], st['VmHWM']))
            halt.wait(0.25)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    appender = Appender(args.current, args.gen, args.append_per_s)
    appender.start()
    start = time.monotonic()
    waves: list[dict[str, Any]] = []
    result: dict[str, Any] = {'label': args.label, 'auditor': args.auditor}
    try:
        for wave in range(1, args.waves + 1):
            want = wave * args.audits
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f'the auditor exited with {proc.returncode} (see {logfile})')
                m = metrics(port)
                done = m.get('kopf_audit_audits_total', 0) + m.get('kopf_audit_audit_failures_total', 0)
                if done >= want:
                    break
                if time.monotonic() - start > args.timeout:
                    raise RuntimeError(f'{done:.0f}/{want} audits after {args.timeout} s')
                time.sleep(1)
            st = status_kib(proc.pid)
            w = {'wave': wave, 'at_s': round(time.monotonic() - start), 'audits': int(m.get('kopf_audit_audits_total', 0)),
                 'failures': int(m.get('kopf_audit_audit_failures_total', 0)),
                 'log_mib_read': round(m.get('kopf_audit_log_bytes_read_total', 0) / 2**20),
                 'rss_kib': st.get('VmRSS'), 'hwm_kib': st.get('VmHWM')}
            waves.append(w)
            log(f"wave {wave}/{args.waves}: {w['audits']} audits ({w['failures']} failed) after {w['at_s']}s, "
                f"{w['log_mib_read']} MiB of log read; RSS {mib(w['rss_kib'])}, peak {mib(w['hwm_kib'])}")
    except RuntimeError as e:
        result['error'] = str(e)
        log(f'ERROR: {e}')
    finally:
        halt.set()
        appender.halt.set()
        sampler.join(timeout=2)
        final = status_kib(proc.pid)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    result['waves'] = waves
    result['exit_code'] = proc.returncode
    result['rss_peak_kib'] = max((r for _, r, _ in samples), default=None)
    result['hwm_kib'] = final.get('VmHWM') or max((h for _, _, h in samples), default=None)
    result['rss_end_kib'] = final.get('VmRSS') or (samples[-1][1] if samples else None)
    result['samples'] = len(samples)
    return result


def statuses(kube: Kube, args: argparse.Namespace) -> list[str]:
    """One line per KopfAudit: its conditions, and whether the logs area says partial."""
    out = []
    for a in kube.list(f'/apis/kopfaudit.dev/v1alpha1/namespaces/{args.namespace}/kopfaudits'):
        st = a.get('status') or {}
        conds = ' '.join(f"{c['type']}={c['status']}/{c.get('reason', '')}" for c in st.get('conditions') or [])
        checks = sorted({f.get('check', '?') for f in st.get('findings') or []})
        out.append(f"{a['metadata']['name']}: {conds}; findings: {', '.join(checks)}")
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument('--kubeconfig', required=True)
    p.add_argument('--auditor', required=True)
    p.add_argument('--label', default='')
    p.add_argument('--auditor-args', default='')
    p.add_argument('--workdir', required=True)
    p.add_argument('--namespace', default='bench-mem-worst')
    p.add_argument('--node', default='bench-mem-node')
    p.add_argument('--audits', type=int, default=8)
    p.add_argument('--replicas', type=int, default=20)
    p.add_argument('--log-mib', type=int, default=64)
    p.add_argument('--previous-mib', type=int, default=8)
    p.add_argument('--frames', type=int, default=30)
    p.add_argument('--objects', type=int, default=50)
    p.add_argument('--object-kib', type=int, default=1400)
    p.add_argument('--interval', default='30s')
    p.add_argument('--waves', type=int, default=4)
    p.add_argument('--append-per-s', type=int, default=20)
    p.add_argument('--timeout', type=int, default=1200)
    p.add_argument('--as-limit-mib', type=int, default=0)
    p.add_argument('--keep', action='store_true')
    p.add_argument('--reuse', action='store_true')
    args = p.parse_args()
    args.label = args.label or args.auditor
    args.label_safe = ''.join(c if c.isalnum() else '-' for c in args.label)[-40:]
    workdir = Path(args.workdir)
    logdir = workdir / 'pod-logs'
    logdir.mkdir(parents=True, exist_ok=True)
    kube = Kube(args.kubeconfig)
    try:
        if args.reuse:
            args.gen = CrashLog(args.frames)
            args.gen.n = 10**7
            args.current = logdir / 'current.log'
            for i in range(args.audits):  # a fresh auditor, fresh statuses
                kube.delete(f'/apis/kopfaudit.dev/v1alpha1/namespaces/{args.namespace}/kopfaudits/audit-{i}')
            time.sleep(2)
            for i in range(args.audits):
                kube.create(f'/apis/kopfaudit.dev/v1alpha1/namespaces/{args.namespace}/kopfaudits', {
                    'apiVersion': 'kopfaudit.dev/v1alpha1', 'kind': 'KopfAudit',
                    'metadata': {'name': f'audit-{i}', 'namespace': args.namespace},
                    'spec': {'target': {'deployment': f'op-{i}'}, 'interval': args.interval,
                             'logs': {'window': '24h', 'limitBytes': '64Mi'},
                             'handledResources': [{'group': GROUP, 'version': 'v1', 'plural': 'widgets'}]},
                })
        else:
            setup(kube, args, logdir)
        result = measure(kube, args)
        for line in statuses(kube, args):
            log(line)
        result['config'] = {k: getattr(args, k) for k in ('audits', 'replicas', 'log_mib', 'previous_mib', 'frames',
                                                          'objects', 'object_kib', 'interval', 'waves')}
        out = workdir / f'memory-{time.strftime("%Y%m%d-%H%M%S")}-{args.label_safe}.json'
        out.write_text(json.dumps(result, indent=1))
        print(f"label: {result['label']}")
        print(f"config: {json.dumps(result['config'])}")
        for w in result['waves']:
            print(f"wave {w['wave']}: audits {w['audits']} failures {w['failures']} log_read {w['log_mib_read']} MiB "
                  f"rss {mib(w['rss_kib'])} hwm {mib(w['hwm_kib'])} at {w['at_s']}s")
        print(f"rss_peak: {mib(result['rss_peak_kib'])}")
        print(f"vm_hwm: {mib(result['hwm_kib'])}")
        print(f"rss_end: {mib(result['rss_end_kib'])}")
        if 'error' in result:
            print(f"error: {result['error']}")
        print(f'results: {out}')
    finally:
        if not args.keep:
            teardown(kube, args)


if __name__ == '__main__':
    main()
