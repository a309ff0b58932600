#!/usr/bin/env python3
"""The cost of `kopf-audit discover -A` in a platform-sized cluster (BENCHMARKS.md,
"Discovery"); hack/bench-discover.sh runs it.

On a tainted kwok node of its own (so nothing else lands there, and its pods land
nowhere else), in namespaces of its own, it creates D noise Deployments of R replicas
(default 2,000 x 5: 10,000 pods), H% of them with no command (the image's CMD: their
spec cannot decide, so discovery reads one pod's log each; a kwok `ClusterLogs` serves
every noise pod a web server's log larger than the 64 KiB read) and the rest with a
written-out program that is not Python (decided by the spec); plus K kopf Deployments
with `kopf run` on their command line and L with no command whose pods' log is kopf's
(`full` format). Then it runs `kopf-audit discover -A -o json` N times under
/usr/bin/time -v, checks that it found exactly the K + L operators it created (besides
whatever else the cluster runs), prints wall time, peak RSS and the request counts
discover reports, and deletes what it created (unless --keep).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kube import ApiError, Kube, log, parallel  # noqa: E402

TAINT = 'kopfaudit.dev/bench-discover'
LABEL = 'kopfaudit.dev/bench-discover'
NODE = 'bench-discover-node'
NOISE_NS = 'bench-discover-{:02d}'
KOPF_NS = 'bench-discover-kopf'
CLUSTER_LOGS = ('bench-discover-noise', 'bench-discover-kopf')


def placement() -> dict[str, Any]:
    return {'nodeSelector': {TAINT: 'true'},
            'tolerations': [{'key': TAINT, 'operator': 'Exists', 'effect': 'NoSchedule'}]}


def deployment(ns: str, name: str, replicas: int, container: dict[str, Any], role: str) -> dict[str, Any]:
    labels = {'app.kubernetes.io/name': name, LABEL: role}
    return {
        'apiVersion': 'apps/v1', 'kind': 'Deployment',
        'metadata': {'name': name, 'namespace': ns, 'labels': labels},
        'spec': {
            'replicas': replicas,
            'selector': {'matchLabels': {'app.kubernetes.io/name': name}},
            'template': {'metadata': {'labels': labels},
                         'spec': {'containers': [container], **placement()}},
        },
    }


def noise(ns: str, i: int, replicas: int, hidden: bool) -> dict[str, Any]:
    container: dict[str, Any] = {
        'name': 'app', 'image': f'registry.example.com/{ns}/app-{i:04d}:1.{i % 7}.0',
        'ports': [{'containerPort': 8080, 'name': 'http'}],
        'resources': {'requests': {'cpu': '50m', 'memory': '64Mi'}, 'limits': {'memory': '128Mi'}},
        'readinessProbe': {'httpGet': {'path': '/ready', 'port': 'http'}},
        'env': [{'name': 'LOG_LEVEL', 'value': 'info'}],
    }
    if not hidden:
        container['command'] = ['/app/server']
        container['args'] = ['--port=8080']
    return deployment(ns, f'app-{i:04d}', replicas, container, 'noise')


def kopf_op(i: int, hidden: bool) -> dict[str, Any]:
    container: dict[str, Any] = {'name': 'operator', 'image': f'registry.example.com/ops/op-{i}:1.0.0'}
    if not hidden:
        container['command'] = ['kopf', 'run']
        container['args'] = ['--standalone', f'--namespace={KOPF_NS}', '/app/op.py']
    name = f'{"hidden" if hidden else "cmd"}-op-{i}'
    return deployment(KOPF_NS, name, 1, container, 'kopf')


def write_logs(workdir: Path) -> tuple[Path, Path]:
    noise_log, kopf_log = workdir / 'noise.log', workdir / 'kopf.log'
    with noise_log.open('w') as f:
        for n in range(1500):  # ~ 150 KiB: more than the 64 KiB discovery reads
            f.write(f'2026-12-02T11:{n // 60 % 60:02d}:{n % 60:02d}.000000000Z stdout F 10.0.{n % 250}.1 - - '
                    f'[02/Dec/2026:11:00:00 +0000] "GET /items/{n} HTTP/1.1" 200 612 "-" "probe/1.0"\n')
    lines = [
        "[2026-12-02 11:00:00,000] kopf._core.reactor.r [DEBUG   ] Starting Kopf 1.45.2.",
        "[2026-12-02 11:00:00,010] kopf.activities.star [INFO    ] Initial authentication has been initiated.",
        "[2026-12-02 11:00:00,020] kopf.activities.auth [INFO    ] Activity 'login_via_client' succeeded.",
        "[2026-12-02 11:00:00,030] kopf._core.engines.a [INFO    ] Initial authentication has finished.",
        f"[2026-12-02 11:00:01,000] kopf.objects         [INFO    ] [{KOPF_NS}/w1] Handler 'create_fn' succeeded.",
    ]
    kopf_log.write_text(''.join(f'2026-12-02T11:00:0{i}.000000000Z stderr F {line}\n' for i, line in enumerate(lines)))
    return noise_log, kopf_log


def setup(kube: Kube, args: argparse.Namespace, workdir: Path) -> None:
    pods = args.deployments * args.replicas + args.kopf_cmd + args.kopf_hidden
    log(f'node {NODE} (kwok, tainted {TAINT}) for {pods} pods')
    capacity = {'cpu': '4096', 'memory': '64Ti', 'pods': str(pods + 100)}
    kube.create('/api/v1/nodes', {
        'apiVersion': 'v1', 'kind': 'Node',
        'metadata': {'name': NODE,
                     'annotations': {'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0'},
                     'labels': {'kubernetes.io/hostname': NODE, 'type': 'kwok', TAINT: 'true'}},
        'spec': {'taints': [{'key': TAINT, 'value': 'true', 'effect': 'NoSchedule'}]},
        'status': {'allocatable': capacity, 'capacity': capacity},
    })
    namespaces = [NOISE_NS.format(n) for n in range(args.namespaces)] + [KOPF_NS]
    for ns in namespaces:
        kube.create('/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace',
                                           'metadata': {'name': ns, 'labels': {LABEL: 'true'}}})
    for ns in namespaces:
        for _ in range(60):
            try:
                kube.get(f'/api/v1/namespaces/{ns}/serviceaccounts/default')
                break
            except ApiError:
                time.sleep(1)
    noise_log, kopf_log = write_logs(workdir)
    for name, selected, container, path in [
        (CLUSTER_LOGS[0], namespaces[:-1], 'app', noise_log),
        (CLUSTER_LOGS[1], [KOPF_NS], 'operator', kopf_log),
    ]:
        kube.create('/apis/kwok.x-k8s.io/v1alpha1/clusterlogs', {
            'apiVersion': 'kwok.x-k8s.io/v1alpha1', 'kind': 'ClusterLogs', 'metadata': {'name': name},
            'spec': {'selector': {'matchNamespaces': selected},
                     'logs': [{'containers': [container], 'logsFile': str(path), 'follow': False}]},
        })
    hidden_every = max(1, round(100 / args.hidden_percent)) if args.hidden_percent > 0 else 0
    bodies = [(NOISE_NS.format(i % args.namespaces),
               noise(NOISE_NS.format(i % args.namespaces), i, args.replicas,
                     hidden_every > 0 and i % hidden_every == 0))
              for i in range(args.deployments)]
    bodies += [(KOPF_NS, kopf_op(i, False)) for i in range(args.kopf_cmd)]
    bodies += [(KOPF_NS, kopf_op(i, True)) for i in range(args.kopf_hidden)]
    parallel(lambda b: kube.create(f'/apis/apps/v1/namespaces/{b[0]}/deployments', b[1]),
             bodies, args.workers, 'Deployments', log=log)
    log(f'waiting for {pods} pods Running')
    start = time.monotonic()
    while True:
        running = sum(1 for _ in kube.list('/api/v1/pods', limit=5000, params={
            'fieldSelector': f'spec.nodeName={NODE},status.phase=Running'}))
        if running >= pods:
            break
        if time.monotonic() - start > args.pod_timeout:
            raise RuntimeError(f'only {running}/{pods} pods Running after {args.pod_timeout}s')
        log(f'pods Running: {running}/{pods} after {time.monotonic() - start:.0f}s')
        time.sleep(15)
    log(f'{pods} pods Running after {time.monotonic() - start:.0f}s')


def teardown(kube: Kube, args: argparse.Namespace) -> None:
    namespaces = [NOISE_NS.format(n) for n in range(args.namespaces)] + [KOPF_NS]
    log(f'deleting {len(namespaces)} namespaces, the ClusterLogs and node {NODE}')
    for ns in namespaces:
        kube.request('DELETE', f'/api/v1/namespaces/{ns}', ok=(404,))
    for name in CLUSTER_LOGS:
        kube.request('DELETE', f'/apis/kwok.x-k8s.io/v1alpha1/clusterlogs/{name}', ok=(404,))
    start = time.monotonic()
    while time.monotonic() - start < args.pod_timeout:
        left = [ns for ns in namespaces if kube.request('GET', f'/api/v1/namespaces/{ns}', ok=(404,))]
        if not left:
            break
        log(f'{len(left)} namespaces still terminating after {time.monotonic() - start:.0f}s')
        time.sleep(10)
    kube.request('DELETE', f'/api/v1/nodes/{NODE}', ok=(404,))
    log('deleted')


def run_discover(args: argparse.Namespace) -> dict[str, Any]:
    cmd = ['/usr/bin/time', '-v', args.auditor, 'discover', '-A', '-o', 'json']
    env = {'KUBECONFIG': args.kubeconfig, 'PATH': '/usr/bin:/bin'}
    start = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise RuntimeError(f'discover failed ({done.returncode}): {done.stderr[-2000:]}')
    out = json.loads(done.stdout)
    rss = re.search(r'Maximum resident set size \(kbytes\): (\d+)', done.stderr)
    cpu_user = re.search(r'User time \(seconds\): ([\d.]+)', done.stderr)
    cpu_sys = re.search(r'System time \(seconds\): ([\d.]+)', done.stderr)
    ours = [o for o in out['operators'] if o['namespace'] == KOPF_NS]
    expected = args.kopf_cmd + args.kopf_hidden
    if len(ours) != expected:
        raise RuntimeError(f'found {len(ours)} of the {expected} bench operators: {ours}')
    noise_found = [o for o in out['operators'] if o['namespace'].startswith('bench-discover-')
                   and o['namespace'] != KOPF_NS]
    if noise_found:
        raise RuntimeError(f'noise taken for kopf: {noise_found[:3]}')
    by = sorted(o['recognisedBy'] for o in ours)
    return {
        'wall_s': round(wall, 2),
        'peak_rss_kib': int(rss.group(1)) if rss else None,
        'cpu_s': round(float(cpu_user.group(1)) + float(cpu_sys.group(1)), 2) if cpu_user and cpu_sys else None,
        'operators': len(out['operators']),
        'bench_operators_by': by,
        'undetermined': len(out['undetermined']),
        'cost': out['cost'],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--kubeconfig', required=True)
    p.add_argument('--auditor', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--deployments', type=int, default=2000)
    p.add_argument('--replicas', type=int, default=5)
    p.add_argument('--namespaces', type=int, default=20)
    p.add_argument('--hidden-percent', type=int, default=10)
    p.add_argument('--kopf-cmd', type=int, default=3)
    p.add_argument('--kopf-hidden', type=int, default=2)
    p.add_argument('--runs', type=int, default=3)
    p.add_argument('--workers', type=int, default=8)
    p.add_argument('--pod-timeout', type=int, default=1800)
    p.add_argument('--keep', action='store_true')
    p.add_argument('--reuse', action='store_true')
    args = p.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    kube = Kube(args.kubeconfig)
    try:
        if not args.reuse:
            setup(kube, args, workdir)
        runs = []
        for n in range(args.runs):
            r = run_discover(args)
            log(f'run {n + 1}: {r}')
            runs.append(r)
    finally:
        if not args.keep:
            teardown(kube, args)
    stamp = time.strftime('%Y%m%dT%H%M%S')
    result = {'deployments': args.deployments, 'replicas': args.replicas, 'hidden_percent': args.hidden_percent,
              'kopf_cmd': args.kopf_cmd, 'kopf_hidden': args.kopf_hidden, 'runs': runs}
    (workdir / f'discover-{stamp}.json').write_text(json.dumps(result, indent=2))
    walls = sorted(r['wall_s'] for r in runs)
    rss = sorted(r['peak_rss_kib'] or 0 for r in runs)
    c = runs[-1]['cost']
    print(f'deployments listed: {c["deployments"]} in {c["pages"]} pages ({c["listBytes"] / 2**20:.1f} MiB)')
    print(f'decided by spec / by log: {c["decidedBySpec"]} / {c["decidedByLog"]}')
    peering = c.get('peeringLists', 0)
    print(f'requests: {c["requests"]} ({c["podLists"]} pod lists, {peering} peering lists, '
          f'{c["requests"] - c["pages"] - c["podLists"] - peering} log reads of at most 64 KiB)')
    print(f'wall time (s), {len(runs)} runs: {walls}')
    print(f'peak RSS (MiB), {len(runs)} runs: {[round(k / 1024, 1) for k in rss]}')
    print(f'CPU (s): {[r["cpu_s"] for r in runs]}')
    print(f'bench operators found: {runs[-1]["bench_operators_by"]}')


if __name__ == '__main__':
    main()
