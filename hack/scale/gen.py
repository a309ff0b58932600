"""What the scale bench creates: a deterministic plan (namespaces, Deployments, audit
targets with their RBAC, log profiles and Event profiles) and the generators of kopf
logs (CRI format, kopf's `full`, `json` and `plain` formats) and of Events.

Everything is drawn from fixed random streams, so that two runs at the same scale
build the same cluster (pod names and times aside).
"""

from __future__ import annotations

import json
import zlib
import math
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

GROUP = 'scale.kopf-audit.dev'
LABEL = 'scale.kopf-audit.dev/role'        # noise | operator | fixture
CRD_KINDS = 20                              # handled resources shared by the targets
NOISE_NS = 'scale-app-{:02d}'
TARGET_NS = 'scale-op-{:04d}'
TARGET = 'op-{:04d}'
WINDOW_S = 600                              # the auditor's default log window (10m)
LIMIT_BYTES = 4 * 1024 * 1024               # the auditor's default limitBytes (4Mi)

# RBAC variants of the audit targets (share in percent). `compliant` grants what kopf
# needs; the others miss or add one thing, as the fixtures of the same names do.
RBAC_VARIANTS = [
    ('compliant', 55), ('no-events-patch', 10), ('no-events', 5), ('no-crd-list', 5),
    ('no-status-patch', 5), ('no-handled-watch', 5), ('over-privileged', 5),
    ('aggregated', 5), ('group-binding', 5),
]
# Which namespaces a target's kopf serves: its own; its own and one noise namespace;
# a glob pattern over noise namespaces; the whole cluster.
SCOPES = [('own', 65), ('own+noise', 30), ('pattern', 3), ('all', 2)]
FORMATS = [('full', 50), ('json', 30), ('plain', 20)]
# What the target's own Events look like: nothing the event checks flag (`quiet`),
# INFO lines mirrored as Logging Events, one Event repeated, failures posted twice.
EVENT_PROFILES = [('quiet', 70), ('logging', 15), ('spam', 10), ('dup', 5)]


def pick(rng: random.Random, table: list[tuple[str, int]]) -> str:
    x = rng.randrange(sum(w for _, w in table))
    for name, w in table:
        if x < w:
            return name
        x -= w
    return table[-1][0]


@dataclass
class Target:
    i: int
    ns: str
    name: str
    rbac: str
    scope: str
    served: list[str]           # noise namespaces served besides its own (own+noise)
    fmt: str
    format_by_env: bool
    crd: int
    rate: float                 # bytes/s of log the operator writes
    uptime: float               # seconds since the current container started
    failing: bool               # its handlers fail often
    restart: str                # '' | 'crashloop' | 'oom'
    restarts: int
    resources: str              # good | no-memory-limit | cpu-limit
    liveness: bool
    persistence: str            # status | annotations
    events: str                 # an EVENT_PROFILES name
    pod: str = ''
    log_file: str = ''
    previous_log_file: str = ''

    @property
    def plural(self) -> str:
        return f'thing{self.crd:02d}s'


@dataclass
class Plan:
    pods: int
    deployments: int
    namespaces: int
    events: int
    audits: int
    noise_ns: list[str] = field(default_factory=list)
    noise_deployments: list[tuple[str, str, int]] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> 'Plan':
        p = Plan(d['pods'], d['deployments'], d['namespaces'], d['events'], d['audits'])
        p.noise_ns = d['noise_ns']
        p.noise_deployments = [tuple(x) for x in d['noise_deployments']]  # type: ignore[misc]
        p.targets = [Target(**t) for t in d['targets']]
        return p


def make_plan(pods: int, deployments: int, namespaces: int, events: int, audits: int) -> Plan:
    p = Plan(pods, deployments, namespaces, events, audits)
    rng = random.Random(20261201)
    p.noise_ns = [NOISE_NS.format(n) for n in range(namespaces)]
    # Replicas: a skewed spread (many small Deployments, a few large), summing to `pods`.
    if deployments:
        weights = [rng.lognormvariate(0, 0.9) for _ in range(deployments)]
        total = sum(weights)
        spare = max(pods - deployments, 0)
        reps = [1 + int(spare * w / total) for w in weights]
        k = 0
        while sum(reps) < pods:
            reps[k % deployments] += 1
            k += 1
        for d in range(deployments):
            p.noise_deployments.append((p.noise_ns[d % namespaces], f'svc-{d:04d}', reps[d]))
    trng = random.Random(19700101)
    for i in range(audits):
        rbac = pick(trng, RBAC_VARIANTS)
        scope = pick(trng, SCOPES) if namespaces else 'own'
        if i == 0:  # the one ClusterRole bound to exactly one operator: a plain compliant target
            rbac, scope = 'compliant', 'own'
        served = [p.noise_ns[trng.randrange(namespaces)]] if scope == 'own+noise' else []
        fmt = pick(trng, FORMATS)
        flooder = trng.random() < 0.01
        rate = trng.uniform(8000, 12000) if flooder else min(max(trng.lognormvariate(math.log(8), 1.1), 1), 4000)
        uptime = math.exp(trng.uniform(math.log(15 * 60), math.log(24 * 3600)))
        size = rate * uptime
        if size > 8 * 1024 * 1024:
            uptime = 8 * 1024 * 1024 / rate
        if size < 4096:
            uptime = 4096 / rate
        r = trng.random()
        restart = 'oom' if r < 0.01 else 'crashloop' if r < 0.03 else ''
        t = Target(
            i=i, ns=TARGET_NS.format(i), name=TARGET.format(i), rbac=rbac, scope=scope, served=served,
            fmt=fmt, format_by_env=trng.random() < 0.5, crd=i % CRD_KINDS, rate=round(rate, 2),
            uptime=round(uptime, 1), failing=trng.random() < 0.15, restart=restart,
            restarts=trng.randint(1, 6) if restart else 0,
            resources=pick(trng, [('good', 80), ('no-memory-limit', 10), ('cpu-limit', 10)]),
            liveness=trng.random() < 0.85, persistence=pick(trng, [('status', 60), ('annotations', 40)]),
            events=pick(trng, EVENT_PROFILES) if i else 'quiet',
        )
        p.targets.append(t)
    return p


# ------------------------------------------------------------------ manifests

def namespace(name: str, role: str) -> dict[str, Any]:
    return {'apiVersion': 'v1', 'kind': 'Namespace',
            'metadata': {'name': name, 'labels': {LABEL: role}}}


def node(name: str, pods: int) -> dict[str, Any]:
    return {
        'apiVersion': 'v1', 'kind': 'Node',
        'metadata': {'name': name,
                     'annotations': {'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0'},
                     'labels': {'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': name,
                                'kubernetes.io/os': 'linux', 'kubernetes.io/role': 'agent',
                                'node-role.kubernetes.io/agent': '', 'type': 'kwok', LABEL: 'noise'}},
        'spec': {},
        'status': {'allocatable': {'cpu': '512', 'memory': '4Ti', 'pods': str(pods)},
                   'capacity': {'cpu': '512', 'memory': '4Ti', 'pods': str(pods)}},
    }


def noise_deployment(ns: str, name: str, replicas: int) -> dict[str, Any]:
    labels = {'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': ns, LABEL: 'noise'}
    return {
        'apiVersion': 'apps/v1', 'kind': 'Deployment',
        'metadata': {'name': name, 'namespace': ns, 'labels': labels},
        'spec': {
            'replicas': replicas,
            'selector': {'matchLabels': {'app.kubernetes.io/name': name}},
            'template': {
                'metadata': {'labels': labels},
                'spec': {'containers': [{
                    'name': 'app', 'image': f'registry.example.com/{ns}/{name}:1.{replicas % 7}.0',
                    'ports': [{'containerPort': 8080, 'name': 'http'}],
                    'resources': {'requests': {'cpu': '50m', 'memory': '64Mi'}, 'limits': {'memory': '128Mi'}},
                    'readinessProbe': {'httpGet': {'path': '/ready', 'port': 'http'}},
                }]},
            },
        },
    }


def crd(k: int) -> dict[str, Any]:
    kind, plural = f'Thing{k:02d}', f'thing{k:02d}s'
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{plural}.{GROUP}', 'labels': {LABEL: 'operator'}},
        'spec': {
            'group': GROUP, 'scope': 'Namespaced',
            'names': {'kind': kind, 'plural': plural, 'singular': kind.lower()},
            'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                          'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {
                              'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
                              'status': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}}],
        },
    }


def _rules(t: Target) -> list[dict[str, Any]]:
    """The namespaced rules kopf needs for the handled resource, minus the variant's gap."""
    cr_verbs = ['get', 'list'] if t.rbac == 'no-handled-watch' else ['get', 'list', 'watch', 'patch']
    rules = [{'apiGroups': [GROUP], 'resources': [t.plural], 'verbs': cr_verbs}]
    if t.rbac != 'no-status-patch':
        rules.append({'apiGroups': [GROUP], 'resources': [f'{t.plural}/status'], 'verbs': ['get', 'patch']})
    if t.rbac == 'no-events-patch':
        rules.append({'apiGroups': [''], 'resources': ['events'], 'verbs': ['create']})
    elif t.rbac != 'no-events':
        rules.append({'apiGroups': [''], 'resources': ['events'], 'verbs': ['create', 'patch']})
    return rules


def _cluster_rules(t: Target) -> list[dict[str, Any]]:
    crd_verbs = ['get'] if t.rbac == 'no-crd-list' else ['get', 'list', 'watch']
    rules = [{'apiGroups': ['apiextensions.k8s.io'], 'resources': ['customresourcedefinitions'], 'verbs': crd_verbs},
             {'apiGroups': [''], 'resources': ['namespaces'], 'verbs': ['list', 'watch']}]
    if t.scope in ('all', 'pattern'):
        rules += _rules(t)
    return rules


def target_objects(t: Target) -> list[tuple[str, dict[str, Any]]]:
    """(API path to POST to, body) for one target, in creation order."""
    ns, name = t.ns, t.name
    labels = {'app.kubernetes.io/name': name, LABEL: 'operator'}
    out: list[tuple[str, dict[str, Any]]] = []
    rbac = '/apis/rbac.authorization.k8s.io/v1'
    out.append((f'/api/v1/namespaces/{ns}/serviceaccounts',
                {'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': {'name': name, 'namespace': ns, 'labels': labels}}))
    cr_name = f'scale-op-{t.i:04d}'
    cr: dict[str, Any] = {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole',
                          'metadata': {'name': cr_name, 'labels': dict(labels)}, 'rules': _cluster_rules(t)}
    if t.rbac == 'aggregated':
        agg = f'{GROUP}/aggregate-to'
        part = {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole',
                'metadata': {'name': f'{cr_name}-part', 'labels': {**labels, agg: cr_name}},
                'rules': cr['rules']}
        out.append((f'{rbac}/clusterroles', part))
        cr['rules'] = []
        cr['aggregationRule'] = {'clusterRoleSelectors': [{'matchLabels': {agg: cr_name}}]}
    out.append((f'{rbac}/clusterroles', cr))
    subject = ({'kind': 'Group', 'apiGroup': 'rbac.authorization.k8s.io', 'name': f'system:serviceaccounts:{ns}'}
               if t.rbac == 'group-binding' else {'kind': 'ServiceAccount', 'name': name, 'namespace': ns})
    out.append((f'{rbac}/clusterrolebindings', {
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding',
        'metadata': {'name': cr_name, 'labels': labels},
        'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': cr_name},
        'subjects': [subject]}))
    if t.rbac == 'over-privileged':
        out.append((f'{rbac}/clusterrolebindings', {
            'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding',
            'metadata': {'name': f'{cr_name}-admin', 'labels': labels},
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': 'cluster-admin'},
            'subjects': [subject]}))
    if t.scope in ('own', 'own+noise'):
        out.append((f'{rbac}/namespaces/{ns}/roles', {
            'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
            'metadata': {'name': name, 'namespace': ns, 'labels': labels}, 'rules': _rules(t)}))
        out.append((f'{rbac}/namespaces/{ns}/rolebindings', {
            'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'RoleBinding',
            'metadata': {'name': name, 'namespace': ns, 'labels': labels},
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'Role', 'name': name},
            'subjects': [subject]}))
    if t.served:
        served_cr = f'{cr_name}-served'
        out.append((f'{rbac}/clusterroles', {
            'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole',
            'metadata': {'name': served_cr, 'labels': labels}, 'rules': _rules(t)}))
        for sns in t.served:
            out.append((f'{rbac}/namespaces/{sns}/rolebindings', {
                'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'RoleBinding',
                'metadata': {'name': cr_name, 'namespace': sns, 'labels': labels},
                'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': served_cr},
                'subjects': [subject]}))
    # The handled objects: two in its own namespace, one in each served noise namespace.
    for ons, oname in [(ns, 'obj-a'), (ns, 'obj-b')] + [(s, f'{name}-x') for s in t.served]:
        out.append((f'/apis/{GROUP}/v1/namespaces/{ons}/{t.plural}', handled_object(t, ons, oname)))
    out.append((f'/apis/apps/v1/namespaces/{ns}/deployments', target_deployment(t)))
    return out


def handled_object(t: Target, ns: str, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {'name': name, 'namespace': ns, 'labels': {LABEL: 'operator'}}
    body: dict[str, Any] = {'apiVersion': f'{GROUP}/v1', 'kind': f'Thing{t.crd:02d}', 'metadata': meta,
                            'spec': {'size': 1 + t.i % 5, 'owner': t.name}}
    if t.persistence == 'annotations':  # kopf's defaults: progress and diff-base in annotations
        meta['finalizers'] = ['kopf.zalando.org/KopfFinalizerMarker']
        meta['annotations'] = {'kopf.zalando.org/last-handled-configuration': json.dumps({'spec': body['spec']})}
    else:
        meta['finalizers'] = [f'{GROUP}/finalizer']
    return body


def target_deployment(t: Target) -> dict[str, Any]:
    labels = {'app.kubernetes.io/name': t.name, LABEL: 'operator'}
    scope = {'own': ['--namespace=$(POD_NAMESPACE)'],
             'own+noise': ['--namespace=$(POD_NAMESPACE)'] + [f'--namespace={s}' for s in t.served],
             'pattern': ['--namespace=scale-app-1*'],
             'all': ['--all-namespaces']}[t.scope]
    args = ['run', '--standalone', *scope, '--liveness=http://0.0.0.0:8080/healthz']
    env: list[dict[str, Any]] = [{'name': 'POD_NAMESPACE', 'valueFrom': {'fieldRef': {'fieldPath': 'metadata.namespace'}}}]
    if t.format_by_env:
        env.append({'name': 'KOPF_RUN_LOG_FORMAT', 'value': t.fmt})
    elif t.fmt != 'full':
        args.append(f'--log-format={t.fmt}')
    args.append('/app/operator.py')
    resources = {'good': {'requests': {'cpu': '100m', 'memory': '256Mi'}, 'limits': {'memory': '512Mi'}},
                 'no-memory-limit': {'requests': {'cpu': '100m', 'memory': '256Mi'}},
                 'cpu-limit': {'requests': {'cpu': '100m', 'memory': '256Mi'},
                               'limits': {'cpu': '500m', 'memory': '512Mi'}}}[t.resources]
    container: dict[str, Any] = {
        'name': 'operator', 'image': f'registry.example.com/operators/{t.name}:2.{t.i % 9}.0',
        'command': ['kopf'], 'args': args, 'env': env,
        'ports': [{'name': 'healthz', 'containerPort': 8080, 'protocol': 'TCP'}],
        'resources': resources,
    }
    if t.liveness:
        container['livenessProbe'] = {'httpGet': {'path': '/healthz', 'port': 'healthz'},
                                      'initialDelaySeconds': 15, 'periodSeconds': 20}
    return {
        'apiVersion': 'apps/v1', 'kind': 'Deployment',
        'metadata': {'name': t.name, 'namespace': t.ns, 'labels': labels},
        'spec': {'replicas': 1, 'strategy': {'type': 'Recreate'},
                 'selector': {'matchLabels': {'app.kubernetes.io/name': t.name}},
                 'template': {'metadata': {'labels': labels},
                              'spec': {'serviceAccountName': t.name, 'containers': [container]}}},
    }


def kopf_audit(ns: str, name: str, interval: str) -> dict[str, Any]:
    return {'apiVersion': 'kopfaudit.dev/v1alpha1', 'kind': 'KopfAudit',
            'metadata': {'name': name, 'namespace': ns, 'labels': {LABEL: 'audit'}},
            'spec': {'target': {'deployment': name}, 'interval': interval}}


# ------------------------------------------------------------------ kopf logs

HANDLERS = ['reconcile', 'create_fn', 'update_fn', 'resume_fn', 'reconcile/sub1']
SA_FMT = 'system:serviceaccount:{ns}:{name}'


def _kubelet_ts(ns_epoch: int) -> str:
    s, frac = divmod(ns_epoch, 1_000_000_000)
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(s)) + f'.{frac:09d}Z'


class LogWriter:
    """kopf output of one target, in its format, as CRI lines: kopf's logging goes to
    stderr, print() and warnings to stdout."""

    def __init__(self, t: Target, rng: random.Random) -> None:
        self.t = t
        self.rng = rng
        self.objects = [(t.ns, 'obj-a'), (t.ns, 'obj-b')] + [(s, f'{t.name}-x') for s in t.served]
        self.sa = SA_FMT.format(ns=t.ns, name=t.name)
        self.kind = f'Thing{t.crd:02d}'

    def _format(self, ts_ns: int, level: str, logger: str, obj: tuple[str, str] | None, msg: str,
                tb: list[str]) -> list[tuple[str, str]]:
        """(stream, line) pairs of one record."""
        t = self.t
        if t.fmt == 'json':
            sev = {'WARNING': 'warn'}.get(level, level.lower())
            rec: dict[str, Any] = {'message': msg}
            secs, frac = divmod(ts_ns, 1_000_000_000)
            rec['timestamp'] = time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(secs)) + f'.{frac // 1000:06d}+00:00'
            if obj:
                rec['object'] = {'apiVersion': f'{GROUP}/v1', 'kind': self.kind, 'name': obj[1],
                                 'uid': f'0d4a4f4e-2f0c-4a53-9d2b-{zlib.crc32(("%s/%s" % obj).encode()):012x}',
                                 'namespace': obj[0]}
            rec['severity'] = sev
            if tb:
                rec['exc_info'] = '\n'.join(tb)
            return [('stderr', json.dumps(rec))]
        prefix = f'[{obj[0]}/{obj[1]}] ' if obj else ''
        if t.fmt == 'full':
            secs, frac = divmod(ts_ns, 1_000_000_000)
            asctime = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(secs)) + f',{frac // 1_000_000:03d}'
            head = f'[{asctime}] {logger[:20]:<20} [{level:<8}] {prefix}{msg}'
        else:
            head = f'{prefix}{msg}'
        return [('stderr', head)] + [('stderr', line) for line in tb]

    def startup(self, ts_ns: int) -> list[tuple[int, str, str]]:
        lines = []
        for k, msg in enumerate(["Activity 'configure' succeeded.", 'Initial authentication has been initiated.',
                                 "Activity 'login_with_kubeconfig' succeeded.", 'Initial authentication has finished.']):
            logger = 'kopf.activities.startup' if k == 0 else 'kopf.activities.authentication' if k == 2 else 'kopf._core.engines.activities'
            for s, line in self._format(ts_ns + k * 3_000_000, 'INFO', logger, None, msg, []):
                lines.append((ts_ns + k * 3_000_000, s, line))
        if self.t.rbac == 'no-crd-list':
            for n in range(1, 10):
                ts = ts_ns + n * 6_000_000_000
                for s, line in self._format(ts, 'ERROR', 'kopf._cogs.clients.api', None, self._forbidden(
                        n, 'GET', 'customresourcedefinitions', 'apiextensions.k8s.io', 'list', None), []):
                    lines.append((ts, s, line))
        return lines

    def _forbidden(self, n: int, method: str, resource: str, group: str, verb: str, ns: str | None) -> str:
        where = f'in the namespace \\"{ns}\\"' if ns else 'at the cluster scope'
        m = (f'{resource}.{group} is forbidden: User \\"{self.sa}\\" cannot {verb} resource \\"{resource}\\" '
             f'in API group \\"{group}\\" {where}').replace('\\"', '"')
        what = 'escalating' if n == 9 else 'will retry'
        url = f'https://10.96.0.1:443/apis/{group}/v1/{resource}'
        return (f"Request attempt #{n}/9 failed; {what}: {method} {url} -> APIForbiddenError('{m}', "
                f"{{'kind': 'Status', 'apiVersion': 'v1', 'metadata': {{}}, 'status': 'Failure', 'message': '{m}', "
                f"'reason': 'Forbidden', 'details': {{'group': '{group}', 'kind': '{resource}'}}, 'code': 403}}, status=403)")

    def record(self, ts_ns: int) -> list[tuple[int, str, str]]:
        """One record at ts_ns (lines with their own times)."""
        rng, t = self.rng, self.t
        obj = self.objects[rng.randrange(len(self.objects))]
        handler = HANDLERS[rng.randrange(len(HANDLERS))]
        roll = rng.randrange(1000)
        fail = 150 if t.failing else 20
        tb: list[str] = []
        level, logger, o = 'INFO', 'kopf.objects', obj
        if roll < fail * 0.8:
            level, msg = 'ERROR', f"Handler '{handler}' failed temporarily: Waiting for the backend of {obj[1]} to become ready."
        elif roll < fail * 0.97:
            level = 'ERROR'
            msg = f"Handler '{handler}' failed with an exception. Will retry."
            tb = ['Traceback (most recent call last):',
                  '  File "/usr/local/lib/python3.12/site-packages/kopf/_core/actions/execution.py", line 277, in execute_handler_once',
                  '    result = await invoke_handler(',
                  f'  File "/app/operator.py", line {40 + t.i % 60}, in {handler.split("/")[0]}',
                  "    size = spec['size']", "KeyError: 'size'"]
        elif roll < fail:
            level, msg = 'ERROR', f"Handler '{handler}' failed permanently: invalid spec.size"
        elif t.rbac == 'no-events' and roll < fail + 60:
            level = 'WARNING'
            msg = (f'Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden: '
                   f'User "{self.sa}" cannot create resource "events" in API group "" in the namespace "{obj[0]}". '
                   f"Details: {{'kind': 'events'}}Event: type='Normal', reason='Logging', message='Handler {handler!r} succeeded.'.")
        elif t.rbac == 'no-handled-watch' and roll < fail + 40:
            level, logger, o = 'ERROR', 'kopf._cogs.clients.api', None
            msg = self._forbidden(1 + rng.randrange(9), 'PATCH', t.plural, GROUP, 'patch', obj[0])
        elif roll < 650:
            msg = f"Handler '{handler}' succeeded."
        elif roll < 760:
            msg = f"{['Creation', 'Updating', 'Resuming'][roll % 3]} is processed: 1 succeeded; 0 failed."
        elif roll < 860:
            msg = "Timer 'health' succeeded."
        elif roll < 960:
            logger = 'operator.handlers'
            msg = f'Reconciled {rng.randrange(9)} replicas for {obj[1]}; spec.size={rng.randrange(100)}'
        elif roll < 970 and t.persistence == 'annotations':
            level = 'WARNING'
            msg = "Patching failed with inconsistencies: (('remove', ('status',), {'kopf': {'progress': {}}}, None),)"
        else:
            noise = ['print() from a handler: processing %s in %s' % (obj[1], obj[0]),
                     '/usr/local/lib/python3.12/site-packages/aiohttp/client.py:1025: DeprecationWarning: verify_ssl is deprecated, use ssl=False instead',
                     'Unclosed client session'][roll % 3]
            return [(ts_ns, 'stdout', noise)]
        return [(ts_ns + k * 1000, s, line) for k, (s, line) in enumerate(self._format(ts_ns, level, logger, o, msg, tb))]

    def lines_between(self, start_ns: int, end_ns: int) -> Iterator[str]:
        """CRI lines of the records between two times, at the target's rate."""
        mean_gap = 150.0 / max(self.t.rate, 0.01)  # ~150 bytes a record on average
        ts = start_ns
        while True:
            ts += int(self.rng.expovariate(1.0 / mean_gap) * 1e9) + 1
            if ts >= end_ns:
                return
            for lts, stream, line in self.record(ts):
                yield f'{_kubelet_ts(lts)} {stream} F {line}\n'


def write_log(path: str, t: Target, start_ns: int, end_ns: int, rng: random.Random, startup: bool = True) -> int:
    w = LogWriter(t, rng)
    n = 0
    with open(path, 'w', encoding='utf-8') as f:
        if startup:
            for ts, s, line in w.startup(start_ns):
                x = f'{_kubelet_ts(ts)} {s} F {line}\n'
                f.write(x)
                n += len(x)
        buf: list[str] = []
        for x in w.lines_between(start_ns + 60_000_000_000 if startup else start_ns, end_ns):
            buf.append(x)
            n += len(x)
            if len(buf) >= 4096:
                f.write(''.join(buf))
                buf.clear()
        f.write(''.join(buf))
    return n


def window_bytes(path: str, now_ns: int, window_s: int = WINDOW_S, limit: int = LIMIT_BYTES) -> int:
    """The bytes of a CRI log that a read with sinceSeconds=window and limitBytes=limit
    returns (what the auditor is served; the kubelet's reader counts whole lines)."""
    since = _kubelet_ts(now_ns - window_s * 1_000_000_000)
    n = 0
    with open(path, 'rb') as f:
        for line in f:
            # RFC3339Nano with a fixed 9-digit fraction compares as text.
            if line[:30].decode('ascii', 'replace') >= since:
                n += len(line)
    return min(n, limit)


# ------------------------------------------------------------------ Events

KUBELET_REASONS = [
    ('BackOff', 'Warning', 'Back-off restarting failed container app in pod {pod}_{ns}({uid})', 12),
    ('Unhealthy', 'Warning', 'Readiness probe failed: HTTP probe failed with statuscode: 503', 8),
    ('Pulled', 'Normal', 'Container image "{image}" already present on machine', 6),
    ('Created', 'Normal', 'Created container: app', 3),
    ('Started', 'Normal', 'Started container app', 3),
    ('Killing', 'Normal', 'Stopping container app', 2),
]
POD_START = [
    ('Scheduled', 'Successfully assigned {ns}/{pod} to {node}', 'default-scheduler'),
    ('Pulled', 'Container image "{image}" already present on machine', 'kubelet'),
    ('Created', 'Created container: operator', 'kubelet'),
    ('Started', 'Started container operator', 'kubelet'),
]
CONTROLLER_REASONS = [
    ('deployment-controller', 'Deployment', 'ScalingReplicaSet', 'Normal', 'Scaled up replica set {name}-7c9f8b6d5 from 2 to 3', 5),
    ('replicaset-controller', 'ReplicaSet', 'SuccessfulCreate', 'Normal', 'Created pod: {name}-7c9f8b6d5-x2x7q', 5),
    ('replicaset-controller', 'ReplicaSet', 'SuccessfulDelete', 'Normal', 'Deleted pod: {name}-7c9f8b6d5-9lz2m', 2),
    ('horizontal-pod-autoscaler', 'HorizontalPodAutoscaler', 'SuccessfulRescale', 'Normal', 'New size: 4; reason: cpu resource utilization (percentage of request) above target', 3),
    ('default-scheduler', 'Pod', 'FailedScheduling', 'Warning', '0/13 nodes are available: 13 Insufficient memory. preemption: 0/13 nodes are available: 13 No preemption victims found for incoming pod.', 1),
    ('cert-manager-certificates-trigger', 'Certificate', 'Issuing', 'Normal', 'Renewing certificate as renewal was scheduled at 2026-11-30 02:00:00 +0000 UTC', 2),
    ('nginx-ingress-controller', 'Ingress', 'Sync', 'Normal', 'Scheduled for sync', 3),
]


def _micro(ts: float) -> str:
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ts)) + f'.{int((ts % 1) * 1e6):06d}Z'


def _sec(ts: float) -> str:
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(ts))


def _event(ns: str, name: str, obj: dict[str, Any], etype: str, reason: str, message: str, component: str,
           last: float, count: int, kopf: bool = False) -> dict[str, Any]:
    first = last - (0 if count == 1 else min(3000.0, count * 30.0))
    ev: dict[str, Any] = {
        'apiVersion': 'v1', 'kind': 'Event',
        'metadata': {'name': name, 'namespace': ns, 'labels': {LABEL: 'noise'}},
        'involvedObject': obj, 'type': etype, 'reason': reason, 'message': message,
        'source': {'component': component}, 'count': count,
        'firstTimestamp': _sec(first), 'lastTimestamp': _sec(last),
    }
    if kopf:  # as kopf posts them (kopf._cogs.clients.events)
        ev['action'] = 'Action?'
        ev['reportingComponent'] = 'kopf'
        ev['reportingInstance'] = 'dev'
        ev['eventTime'] = _micro(last)
        del ev['count']
    return ev


def events(plan: Plan, count: int, now: float, rng: random.Random, pods: dict[str, list[str]],
           spread_s: float = 3300.0, tag: str = '', pod_starts: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
    """`count` Events (namespace, body): ~12% about the audit targets' own objects (by
    their profile; with pod_starts, the start-up Events of their pods, once each), the rest
    in the noise namespaces: kubelet-style (BackOff, probes,
    pulls) on noise pods, other controllers, and kopf's `Logging` Events of the
    operators that serve those namespaces. lastTimestamp spread over `spread_s`."""
    serving: dict[str, list[Target]] = {}
    for t in plan.targets:
        for s in t.served:
            serving.setdefault(s, []).append(t)
    own_budget = min(int(count * 0.12), 4 * len(plan.targets))
    noisy = [t for t in plan.targets if t.events != 'quiet']
    n = 0
    serial = 0
    started: dict[str, int] = {}

    def name(base: str) -> str:
        nonlocal serial
        serial += 1
        return f'{base}.{tag}{serial:07x}'

    # Own Events: operator pods (kubelet), and the profile's kopf Events.
    while n < own_budget and plan.targets:
        t = plan.targets[rng.randrange(len(plan.targets))] if rng.random() < 0.5 or not noisy else noisy[rng.randrange(len(noisy))]
        last = now - rng.uniform(0, spread_s)
        thing = {'apiVersion': f'{GROUP}/v1', 'kind': f'Thing{t.crd:02d}', 'namespace': t.ns,
                 'name': rng.choice(['obj-a', 'obj-b'])}
        if t.events == 'logging':
            yield t.ns, _event(t.ns, name('kopf-event-'), thing, 'Normal', 'Logging', f"Handler 'reconcile' succeeded.",
                               'kopf', last, 1, kopf=True)
        elif t.events == 'spam':
            yield t.ns, _event(t.ns, name(thing['name']), thing, 'Normal', 'Synced', 'Thing is in sync with the backend.',
                               'kopf', last, rng.randint(3, 40))
        elif t.events == 'dup':
            yield t.ns, _event(t.ns, name('kopf-event-'), thing, 'Warning', 'ProvisioningFailed',
                               'Thing provisioning failed: backend answered 503', 'kopf', last, 1, kopf=True)
            n += 1
            yield t.ns, _event(t.ns, name('kopf-event-'), thing, 'Error', 'Logging',
                               "Handler 'reconcile' failed temporarily: backend answered 503", 'kopf', last, 1, kopf=True)
        else:
            # The kubelet's start-up Events of the operator's pod, each once.
            k = started.get(t.ns, 0) if pod_starts else len(POD_START)
            if k >= len(POD_START):
                if not noisy:
                    break
                continue
            started[t.ns] = k + 1
            pod = t.pod or f'{t.name}-6d5f7c8b9-abcde'
            obj = {'apiVersion': 'v1', 'kind': 'Pod', 'namespace': t.ns, 'name': pod, 'fieldPath': 'spec.containers{operator}'}
            reason, msg, comp = POD_START[k]
            yield t.ns, _event(t.ns, name(pod), obj, 'Normal', reason,
                               msg.format(pod=pod, ns=t.ns, node='scale-node-000', image=f'registry.example.com/operators/{t.name}'),
                               comp, last, 1)
        n += 1
    if not plan.noise_ns:
        return
    kubelet_w = sum(w for *_, w in KUBELET_REASONS)
    ctrl_w = sum(w for *_, w in CONTROLLER_REASONS)
    deps_by_ns: dict[str, list[str]] = {}
    for ns, dname, _ in plan.noise_deployments:
        deps_by_ns.setdefault(ns, []).append(dname)
    while n < count:
        ns = plan.noise_ns[rng.randrange(len(plan.noise_ns))]
        last = now - rng.uniform(0, spread_s)
        roll = rng.random()
        if roll < 0.50:
            x = rng.randrange(kubelet_w)
            for reason, etype, msg, w in KUBELET_REASONS:
                if x < w:
                    break
                x -= w
            pod_names = pods.get(ns) or [f'{d}-7c9f8b6d5-x2x7q' for d in deps_by_ns.get(ns, ['app'])]
            pod = pod_names[rng.randrange(len(pod_names))]
            uid = f'5b1c{serial:04x}-0c2d-4e5f-8a9b-{rng.getrandbits(48):012x}'
            obj = {'apiVersion': 'v1', 'kind': 'Pod', 'namespace': ns, 'name': pod, 'uid': uid,
                   'fieldPath': 'spec.containers{app}'}
            cnt = rng.randint(5, 400) if reason == 'BackOff' else rng.randint(1, 30) if reason == 'Unhealthy' else 1
            yield ns, _event(ns, name(pod), obj, etype, reason,
                             msg.format(pod=pod, ns=ns, uid=uid, image=f'registry.example.com/{ns}/app:1.0.0'),
                             'kubelet', last, cnt)
        elif roll < 0.80:
            x = rng.randrange(ctrl_w)
            for comp, kind, reason, etype, msg, w in CONTROLLER_REASONS:
                if x < w:
                    break
                x -= w
            dname = rng.choice(deps_by_ns.get(ns, ['app']))
            obj = {'apiVersion': 'apps/v1' if kind in ('Deployment', 'ReplicaSet') else 'v1', 'kind': kind,
                   'namespace': ns, 'name': dname}
            yield ns, _event(ns, name(dname), obj, etype, reason, msg.format(name=dname), comp, last,
                             rng.randint(1, 3))
        else:
            ops = serving.get(ns)
            if ops:
                t = ops[rng.randrange(len(ops))]
                thing = {'apiVersion': f'{GROUP}/v1', 'kind': f'Thing{t.crd:02d}', 'namespace': ns,
                         'name': f'{t.name}-x'}
            else:  # an operator nobody audits
                thing = {'apiVersion': 'example.com/v1', 'kind': 'Tenant', 'namespace': ns, 'name': f'tenant-{rng.randrange(40)}'}
            etype, msg = rng.choice([('Normal', "Handler 'reconcile' succeeded."),
                                     ('Normal', 'Creation is processed: 1 succeeded; 0 failed.'),
                                     ('Error', "Handler 'reconcile' failed temporarily: backend answered 503"),
                                     ('Warning', 'Patching failed with inconsistencies: (...)')])
            yield ns, _event(ns, name('kopf-event-'), thing, etype, 'Logging', msg, 'kopf', last, 1, kopf=True)
        n += 1
