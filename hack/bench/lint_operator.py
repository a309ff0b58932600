"""Writes a synthetic kopf operator of about N lines of Python, with its rendered chart,
for hack/bench-lint.sh: handlers of every kind on custom and built-in resources, settings
in a startup handler, helpers between them (so the parser sees ordinary code, not only
decorators), one Deployment, its RBAC and CRDs. Not a fixture: nothing asserts on it.

    python3 lint_operator.py OUT_DIR [LINES]
"""
import os
import sys

HEADER = '''import asyncio
import logging
import time

import kopf

GROUP = "bench.kopf-audit.dev"
logger = logging.getLogger(__name__)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.posting.level = logging.WARNING
    settings.persistence.finalizer = "bench.kopf-audit.dev/finalizer"
'''

BLOCK = '''

def helper_{i}(spec, count={i}):
    """Sums what the spec asks for, as real operators' helpers do."""
    total = 0
    for key, value in sorted(spec.items()):
        if isinstance(value, int) and value > count:
            total += value * 2
        elif isinstance(value, str):
            total += len(value.strip())
    return {{"total": total, "items": [k for k in spec if k.startswith("x")]}}


@kopf.on.create(GROUP, "v1", "widgets{m}")
@kopf.on.update(GROUP, "v1", "widgets{m}")
async def reconcile_{i}(spec, name, namespace, logger, patch, **kwargs):
    result = helper_{i}(spec)
    logger.info("reconciled %s/%s: %s", namespace, name, result)
    patch.status["total"] = result["total"]
    await asyncio.sleep(0)
    return result


@kopf.timer(GROUP, "v1", "widgets{m}", interval=60.0)
def check_{i}(spec, status, **kwargs):
    if status.get("total", 0) != helper_{i}(spec)["total"]:
        raise kopf.TemporaryError("drifted", delay=30)
'''

FOOTER = '''

@kopf.on.create("v1", "configmaps", labels={"bench.kopf-audit.dev/owned": "true"})
def owned_configmap(body, logger, **_):
    logger.info("seen %s", body["metadata"]["name"])
'''

CRD = '''---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets{m}.bench.kopf-audit.dev
spec:
  group: bench.kopf-audit.dev
  scope: Namespaced
  names: {{kind: Widget{m}, plural: widgets{m}, singular: widget{m}}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
'''

DEPLOY = '''---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bench-operator, namespace: bench}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bench-operator}
rules:
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [list, watch]
- apiGroups: [bench.kopf-audit.dev]
  resources: ["*"]
  verbs: [get, list, watch, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bench-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bench-operator}
subjects: [{kind: ServiceAccount, name: bench-operator, namespace: bench}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bench-operator, namespace: bench}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: bench-operator}}
  template:
    metadata: {labels: {app: bench-operator}}
    spec:
      serviceAccountName: bench-operator
      containers:
      - name: operator
        image: bench-operator:1
        command: [kopf, run, -A, --standalone, --liveness=http://0.0.0.0:8080/healthz, /app/operator.py]
        resources:
          requests: {memory: 256Mi, cpu: 100m}
          limits: {memory: 512Mi}
        livenessProbe:
          httpGet: {path: /healthz, port: 8080}
'''


def main() -> None:
    out = sys.argv[1]
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    os.makedirs(os.path.join(out, "chart"), exist_ok=True)
    text = HEADER
    i = 0
    while text.count("\n") < lines - FOOTER.count("\n"):
        text += BLOCK.format(i=i, m=i % 20)
        i += 1
    text += FOOTER
    with open(os.path.join(out, "operator.py"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "chart", "rendered.yaml"), "w") as f:
        f.write("".join(CRD.format(m=m) for m in range(20)) + DEPLOY)
    print(f"{text.count(chr(10))} lines of Python, {i} handler blocks, 20 CRDs", file=sys.stderr)


if __name__ == "__main__":
    main()
