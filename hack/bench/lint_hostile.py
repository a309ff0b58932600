"""Writes the hostile repositories of hack/bench-lint-limits.sh, one directory per case,
each at or just over one of lint's bounds (src/gather/files/bounds.rs), as
tests/hostile_lint.rs builds them: Python and YAML nested past any parser's comfort,
files at and just over the size bounds, and trees at and just over the bounds of a
run. Not a fixture: nothing asserts on it. Prints one line per case on stdout:
`name<TAB>directory<TAB>bytes<TAB>files<TAB>what`.

    python3 lint_hostile.py OUT_DIR [CASE...]
"""
import os
import sys

MIB = 1 << 20

# An ordinary handler module's block, repeated to reach a size.
PY_BLOCK = '''

def helper_{i}(spec, count={i}):
    """Sums what the spec asks for."""
    total = 0
    for key, value in sorted(spec.items()):
        if isinstance(value, int) and value > count:
            total += value * 2
    return {{"total": total}}


@kopf.on.create("bench.kopf-audit.dev", "v1", "widgets")
async def create_{i}(spec, logger, patch, **kwargs):
    patch.status["total"] = helper_{i}(spec)["total"]
    logger.info("created")
'''

PY_HEAD = "import kopf\n"

# Ordinary manifests, repeated: a kopf Deployment, its ServiceAccount, RBAC, a Service
# and a ConfigMap.
YAML_BLOCK = '''---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: op-{i}, namespace: ns-{n}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: op-{i}, namespace: ns-{n}}}
rules:
- apiGroups: [bench.kopf-audit.dev]
  resources: [widgets, widgets/status]
  verbs: [get, list, watch, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: op-{i}, namespace: ns-{n}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: op-{i}}}
subjects: [{{kind: ServiceAccount, name: op-{i}, namespace: ns-{n}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings-{i}, namespace: ns-{n}, labels: {{app: op-{i}}}}}
data:
  level: INFO
  interval: "60"
  description: "the settings of operator {i}, as an ordinary ConfigMap holds them"
---
apiVersion: v1
kind: Service
metadata: {{name: op-{i}, namespace: ns-{n}}}
spec:
  selector: {{app: op-{i}}}
  ports: [{{name: http, port: 8080, targetPort: 8080}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: op-{i}, namespace: ns-{n}}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  selector: {{matchLabels: {{app: op-{i}}}}}
  template:
    metadata: {{labels: {{app: op-{i}}}}}
    spec:
      serviceAccountName: op-{i}
      containers:
      - name: operator
        image: op:{i}
        command: [kopf, run, --namespace=ns-{n}, --standalone, /app/op.py]
        resources:
          requests: {{memory: 128Mi, cpu: 50m}}
          limits: {{memory: 256Mi}}
'''

CRD_HEAD = '''apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.bench.kopf-audit.dev
spec:
  group: bench.kopf-audit.dev
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
'''


def crd_field(i, depth, indent):
    """One field of a generated CRD schema: an object nested `depth` deep, with
    descriptions, enums and a list at its bottom, as generated CRDs have."""
    pad = " " * indent
    if depth == 0:
        return (
            f"{pad}field{i}:\n"
            f"{pad}  type: array\n"
            f"{pad}  description: A list of the values field {i} may take, as a generator writes it.\n"
            f"{pad}  items:\n"
            f"{pad}    type: string\n"
            f"{pad}    enum: [alpha, beta, gamma, delta]\n"
        )
    return (
        f"{pad}field{i}:\n"
        f"{pad}  type: object\n"
        f"{pad}  description: Field {i} at depth {depth}, described at length as generated CRDs describe every field.\n"
        f"{pad}  properties:\n"
        + crd_field(i, depth - 1, indent + 4)
        + f"{pad}    count{i}: {{type: integer, minimum: 0, maximum: 1000}}\n"
    )


def sized(head, block, size, pad):
    """`head` and `block` repeated (formatted with i and n), cut to whole blocks and
    padded with `pad` lines to exactly `size` bytes."""
    parts = [head]
    length = len(head)
    i = 0
    while True:
        text = block.format(i=i, n=i % 50)
        if length + len(text) + 200 > size:
            break
        parts.append(text)
        length += len(text)
        i += 1
    text = "".join(parts)
    while len(text) < size:
        line = pad[: size - len(text) - 1] + "\n" if size - len(text) > 1 else "\n"
        text += line
    assert len(text.encode()) == size, (len(text), size)
    return text


def comment_pad(width=79):
    return "#" + " padding" * (width // 8)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode = "wb" if isinstance(text, bytes) else "w"
    with open(path, mode) as f:
        f.write(text)


def python_at(size):
    return sized(PY_HEAD, PY_BLOCK, size, comment_pad())


def yaml_at(size):
    return sized("", YAML_BLOCK, size, comment_pad())


def crd_at(size):
    fields = []
    length = len(CRD_HEAD)
    i = 0
    while True:
        text = crd_field(i, 12, 14)
        if length + len(text) + 200 > size:
            break
        fields.append(text)
        length += len(text)
        i += 1
    return CRD_HEAD + "".join(fields)


def tree(out, count, per_dir=1000):
    """`count` small Python files, `per_dir` in each directory."""
    text = "import kopf\n\nX = 1\n"
    for i in range(count):
        write(os.path.join(out, f"d{i // per_dir:03}", f"m{i}.py"), text)


def deep_dirs(out, levels):
    """A Python handler `levels` directories below the root."""
    path = os.path.join(out, *["d"] * levels, "op.py")
    write(path, "import kopf\n\n@kopf.on.create('widgets')\ndef f(**_):\n    pass\n")


def linked_copies(out, name, text, count):
    """`count` hard links to one file: as many files and bytes to lint, one on disk."""
    first = os.path.join(out, f"{name}0")
    write(first, text)
    for i in range(1, count):
        os.link(first, os.path.join(out, f"{name}{i}"))


def imports_same_name(out, files=700, imports=1000):
    """`files` files all named op.py, each importing `imports` modules whose files
    would be named op.py too, and a Deployment that runs `kopf run /app/op.py`: every
    import is compared with every file of that name (lint's comparison bound)."""
    for i in range(files):
        lines = "".join(f"import x{i}_{j}.op\n" for j in range(imports))
        write(os.path.join(out, f"d{i:04}", "op.py"), "import kopf\n" + lines)
    write(os.path.join(out, "a-deploy.yaml"),
          "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op, namespace: ns}\n"
          "spec:\n  selector: {matchLabels: {app: op}}\n  template:\n"
          "    metadata: {labels: {app: op}}\n    spec:\n      containers:\n"
          "      - name: op\n        image: op:1\n        command: [kopf, run, -A, /app/op.py]\n")


def chain(terms):
    return "x = 1" + "+1" * (terms - 1) + "\n"


def call_fan_repeated(calls=255):
    """Helpers a, b, c, d each calling the next `calls` times, e blocking, and an async
    handler calling a() on `calls` lines: the calls lint follows from a handler."""
    out = ["import kopf\nimport time\n"]
    for name, nxt in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")):
        out.append(f"def {name}():\n" + f"    {nxt}()\n" * calls)
    out.append("def e():\n    time.sleep(1)\n")
    out.append("@kopf.on.create('widgets')\nasync def created(**kwargs):\n" + "    a()\n" * calls)
    return "\n".join(out)


def call_fan_wide(width=64, layers=4, handlers=50):
    """`layers` layers of `width` helpers, each calling every helper of the next layer,
    none blocking, and `handlers` async handlers calling every helper of the first:
    width ** layers paths from each handler, all searched to the end."""
    out = ["import kopf\nimport time\n"]
    for layer in range(layers):
        for i in range(width):
            if layer + 1 < layers:
                body = "".join(f"    h{layer + 1}_{j}()\n" for j in range(width))
            else:
                body = "    pass\n"
            out.append(f"def h{layer}_{i}():\n{body}")
    for k in range(handlers):
        calls = "".join(f"    h0_{j}()\n" for j in range(width))
        out.append(f"@kopf.on.create('widgets{k}')\nasync def created_{k}(**kwargs):\n{calls}")
    return "\n".join(out)


CASES = {
    # Python: size.
    "py-size-1mib": ("ordinary Python, exactly 1 MiB (at the bound)",
                     lambda d: write(f"{d}/op.py", python_at(MIB))),
    "py-size-1mib+1": ("ordinary Python, 1 MiB + 1 byte (over)",
                       lambda d: write(f"{d}/op.py", python_at(MIB + 1))),
    # Python: the nesting estimate, at 1,000 and past it.
    "py-chain-1000": ("`1+1+…`, 1,000 terms (at the depth bound)",
                      lambda d: write(f"{d}/op.py", chain(1000))),
    "py-chain-1001": ("`1+1+…`, 1,001 terms (over)",
                      lambda d: write(f"{d}/op.py", chain(1001))),
    "py-attr-100k": ("`a.a.a…`, 100,000 deep",
                     lambda d: write(f"{d}/op.py", "x = a" + ".a" * 100_000 + "\n")),
    "py-sum-100k": ("`1+1+…`, 100,000 terms",
                    lambda d: write(f"{d}/op.py", chain(100_000))),
    "py-unary-100k": ("`---…1`, 100,000 deep",
                      lambda d: write(f"{d}/op.py", "x = " + "-" * 100_000 + "1\n")),
    "py-calls-100k": ("`f()()…`, 100,000 calls",
                      lambda d: write(f"{d}/op.py", "x = f" + "()" * 100_000 + "\n")),
    # Python: brackets, at 199 open (the module level counts one) and past it.
    "py-parens-199": ("199 nested parentheses (at the bracket bound)",
                      lambda d: write(f"{d}/op.py", "x = " + "(" * 199 + "1" + ")" * 199 + "\n")),
    "py-parens-200": ("200 nested parentheses (over)",
                      lambda d: write(f"{d}/op.py", "x = " + "(" * 200 + "1" + ")" * 200 + "\n")),
    "py-parens-500k": ("500,000 nested parentheses",
                       lambda d: write(f"{d}/op.py", "x = " + "(" * 500_000 + "1" + ")" * 500_000 + "\n")),
    # Python: the calls lint follows from handlers into helpers (4 deep).
    "py-call-fan-repeated": ("helpers calling the next 255 times, 4 deep; a handler calling the first 255 times",
                             lambda d: write(f"{d}/op.py", call_fan_repeated())),
    "py-call-fan-wide": ("4 layers of 64 helpers each calling all 64 of the next, none blocking; 50 async handlers",
                         lambda d: write(f"{d}/op.py", call_fan_wide())),
    "py-imports-same-name": ("700 files named op.py, each importing 1,000 modules named op; kopf runs /app/op.py",
                             lambda d: imports_same_name(d)),
    "py-not-utf8": ("Python that is not UTF-8",
                    lambda d: write(f"{d}/op.py", b"x = '\xff\xfe'\n")),
    # YAML: size.
    "yaml-size-8mib": ("ordinary manifests, exactly 8 MiB (at the bound)",
                       lambda d: write(f"{d}/all.yaml", yaml_at(8 * MIB))),
    "yaml-size-8mib+1": ("ordinary manifests, 8 MiB + 1 byte (over)",
                         lambda d: write(f"{d}/all.yaml", yaml_at(8 * MIB + 1))),
    "yaml-crd-4mib": ("one CRD, a 4 MiB schema 13 objects deep",
                      lambda d: write(f"{d}/crd.yaml", crd_at(4 * MIB))),
    # YAML: flow depth, at 128 and past it; block indentation past 512.
    "yaml-flow-128": ("`[[[…]]]` 128 deep (at the flow bound)",
                      lambda d: write(f"{d}/cm.yaml", "apiVersion: v1\nkind: ConfigMap\ndata: " + "[" * 128 + "]" * 128 + "\n")),
    "yaml-flow-129": ("`[[[…]]]` 129 deep (over)",
                      lambda d: write(f"{d}/cm.yaml", "apiVersion: v1\nkind: ConfigMap\ndata: " + "[" * 129 + "]" * 129 + "\n")),
    "yaml-flow-100k": ("`[[[…]]]` 100,000 deep",
                       lambda d: write(f"{d}/cm.yaml", "apiVersion: v1\nkind: ConfigMap\ndata: " + "[" * 100_000 + "]" * 100_000 + "\n")),
    "yaml-compact-255": ("`- - - x`, 255 deep (indent 512, at the bound)",
                         lambda d: write(f"{d}/cm.yaml", "apiVersion: v1\nkind: ConfigMap\ndata:\n  " + "- " * 255 + "x\n")),
    "yaml-compact-100k": ("`- - - x`, 100,000 deep",
                          lambda d: write(f"{d}/cm.yaml", "apiVersion: v1\nkind: ConfigMap\ndata:\n  " + "- " * 100_000 + "x\n")),
    # A run: files, bytes, directory depth.
    "files-20000": ("20,000 small Python files (at the file bound)",
                    lambda d: tree(d, 20_000)),
    "files-20001": ("20,001 small Python files (over)",
                    lambda d: tree(d, 20_001)),
    "bytes-py-256mib": ("257 Python files of 1 MiB (over 256 MiB a run)",
                        lambda d: linked_copies(d, "m", python_at(MIB), 257) or rename_py(d)),
    "bytes-yaml-256mib": ("33 manifest files of 8 MiB (over 256 MiB a run)",
                          lambda d: linked_copies(d, "m", yaml_at(8 * MIB), 33) or rename(d, ".yaml")),
    "dirs-31": ("a handler 31 directories deep (at the bound)",
                lambda d: deep_dirs(d, 31)),
    "dirs-32": ("a handler 32 directories deep (over)",
                lambda d: deep_dirs(d, 32)),
}


def rename(d, ext):
    for name in os.listdir(d):
        os.rename(os.path.join(d, name), os.path.join(d, name + ext))


def rename_py(d):
    rename(d, ".py")


def size_of(d):
    """Bytes and files lint is given (each hard link counted)."""
    total = files = 0
    for root, _, names in os.walk(d):
        for name in names:
            total += os.path.getsize(os.path.join(root, name))
            files += 1
    return total, files


def main():
    out = sys.argv[1]
    chosen = sys.argv[2:] or list(CASES)
    for name in chosen:
        what, make = CASES[name]
        d = os.path.join(out, name)
        os.makedirs(d)
        make(d)
        total, files = size_of(d)
        print(f"{name}\t{d}\t{total}\t{files}\t{what}")


if __name__ == "__main__":
    main()
