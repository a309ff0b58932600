#!/usr/bin/env python3
"""What the auditor's heap held at one moment of a heaptrack profile, by owner.

heaptrack's own printer shows the peak and what leaked at exit, not the heap at a
moment; its massif export gives only the total. This reads the profile's event stream
(heaptrack's interpreted text format: `a SIZE TRACE` allocation kinds, `+ KIND` and
`- KIND` allocations and frees, `c MS` the clock, `t IP PARENT` traces, `i IP MODULE
FUNC FILE LINE...` frames, `s LEN TEXT` strings), counts what is live at SECONDS, and
sums it by the first owner a rule below finds in each allocation's backtrace.

    zstd -dc PREFIX.PID.zst | hack/scale/heap-at.py SECONDS [--detail N]

The profile comes from hack/scale/heaptrack-exec.sh (BENCHMARKS.md, "The target's read
kept between audits"); backtraces are demangled with binutils' c++filt.
"""
import collections
import subprocess
import sys

# (owner, a text any frame of the backtrace contains), first match wins.
RULES = [
    ("status copies kept until the watch delivers them", "reconcile::written"),
    ("the KopfAudit watch cache (reflector store)", "apply_watcher_event<kopf_audit::api::KopfAudit>"),
    ("KopfAudit watch events in flight", "watcher::Event<kopf_audit::api::KopfAudit>"),
    ("the RBAC watch caches", "api::rbac::v1"),
    ("metrics label sets", "publish::metrics"),
    ("log memory (digests, kopf-log tallies)", "gather::logs"),
    ("log memory (digests, kopf-log tallies)", "kopf_log::"),
    ("SubjectAccessReview answers", "model::rbac::Permission"),
    ("the RBAC reader", "gather::rbac"),
    ("the conflict scan (operators, discovery rows)", "gather::operators"),
    ("the conflict scan (operators, discovery rows)", "model::discovery"),
    ("log verdicts", "gather::recognise"),
    ("what is remembered per audit (targets, kept reads, owed Events)", "reconcile::memory"),
    ("what is remembered per audit (targets, kept reads, owed Events)", "reconcile::targets"),
    ("what is remembered per audit (targets, kept reads, owed Events)", "reconcile::owed"),
    ("audits running", "reconcile::pipeline"),
    ("controller queues and predicate caches", "kube_runtime::controller"),
    ("controller queues and predicate caches", "kube_runtime::scheduler"),
    ("controller queues and predicate caches", "kube_runtime::utils::predicate"),
    ("HTTP connections", "hyper"),
    ("HTTP connections", "rustls"),
    ("the tokio runtime", "tokio::"),
]


def read(stream, until_ms):
    strings, ips, traces, kinds = [None], [None], [(0, 0)], []
    live = collections.Counter()
    for line in stream:
        tag = line[:1]
        if tag == "+":
            live[int(line[2:], 16)] += 1
        elif tag == "-":
            live[int(line[2:], 16)] -= 1
        elif tag == "a":
            size, trace = line[2:].split()
            kinds.append((int(size, 16), int(trace, 16)))
        elif tag == "t":
            ip, parent = line[2:].split()
            traces.append((int(ip, 16), int(parent, 16)))
        elif tag == "i":
            fields = line[2:].split()[2:]
            ips.append([int(fields[k], 16) for k in range(0, len(fields), 3)])
        elif tag == "s":
            parts = line[2:].rstrip("\n").split(" ", 1)
            strings.append(parts[1] if len(parts) > 1 else "")
        elif tag == "c" and int(line[2:], 16) >= until_ms:
            break
    return strings, ips, traces, kinds, live


def main():
    seconds = float(sys.argv[1])
    detail = int(sys.argv[sys.argv.index("--detail") + 1]) if "--detail" in sys.argv else 0
    strings, ips, traces, kinds, live = read(sys.stdin, seconds * 1000)
    by_trace = collections.Counter()
    for kind, count in live.items():
        if count > 0:
            size, trace = kinds[kind]
            by_trace[trace] += size * count

    def frames(trace):
        out = []
        while trace:
            ip, trace = traces[trace]
            out.extend(strings[f] for f in ips[ip] if f and strings[f])
        return out

    stacks = {t: frames(t) for t in by_trace}
    names = sorted({f for fs in stacks.values() for f in fs})
    plain = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    demangled = dict(zip(names, plain))
    owners, unowned = collections.Counter(), collections.Counter()
    for trace, size in by_trace.items():
        stack = [demangled.get(f, f) for f in stacks[trace]]
        owner = next((o for o, key in RULES if any(key in f for f in stack)), None)
        if owner is None:
            owner = "other"
            own = [f for f in stack if "kopf_audit" in f or "kube" in f][:2]
            unowned[" <- ".join(f[:100] for f in own or stack[:3])] += size
        owners[owner] += size
    total = sum(owners.values())
    print(f"live heap at {seconds:.0f} s: {total / 2**20:.1f} MiB")
    print("| owner | MiB |\n|---|---|")
    for owner, size in owners.most_common():
        print(f"| {owner} | {size / 2**20:.1f} |")
    for where, size in unowned.most_common(detail):
        print(f"{size / 2**20:7.2f} MiB  {where}")


if __name__ == "__main__":
    main()
