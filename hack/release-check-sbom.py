#!/usr/bin/env python3
"""Checks a release's CycloneDX SBOM (hack/release.sh) against the dependency graph.

usage: release-check-sbom.py REPO SBOM.json SBOM_WORKDIR TARGET...

"Every crate in the binary" means: the kopf-audit package and each package that
`cargo tree --locked -p kopf-audit -e normal,no-proc-macro --target TARGET` lists for a
release target, i.e. the normal (not build, not dev) dependencies, transitively, with the
features the build resolves, less procedural macros and what only they use (they run
inside the compiler and leave no code in the binary). Build scripts' and proc-macros'
dependencies are therefore not required; the SBOM may list more.

It fails when:
- a crate of that set is missing from the SBOM (matched by name and version);
- a component of the SBOM is not a package of Cargo.lock (name and version);
- a registry crate carries no purl of the form pkg:cargo/NAME@VERSION;
- the SBOM names a local absolute path: the clone, the directory it was generated in,
  $HOME, or any file:/// URL.
Prints what it checked.
"""

import json
import os
import subprocess
import sys
import tomllib


def components(bom):
    """The packages the BOM lists: the described one and its components. Components
    nested in a package are its Cargo targets (lib, bins), not packages."""
    found = list(bom.get("components", []))
    meta = bom.get("metadata", {}).get("component")
    if meta:
        found.append(meta)
    return found


def binary_crates(repo, target):
    """(name, version) of each package compiled into kopf-audit for TARGET."""
    out = subprocess.run(
        ["cargo", "tree", "--locked", "-p", "kopf-audit", "-e", "normal,no-proc-macro",
         "--target", target, "--prefix", "none", "--format", "{p}"],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout
    crates = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].startswith("v"):
            crates.add((parts[0], parts[1][1:]))
    return crates


def main():
    repo, sbom_path, workdir, *targets = sys.argv[1:]
    text = open(sbom_path, encoding="utf-8").read()
    bom = json.loads(text)
    problems = []
    if bom.get("bomFormat") != "CycloneDX":
        problems.append(f"bomFormat is {bom.get('bomFormat')!r}, not CycloneDX")

    listed = {(c.get("name"), c.get("version")) for c in components(bom)}
    lock = tomllib.load(open(os.path.join(repo, "Cargo.lock"), "rb"))
    locked = {(p["name"], p["version"]): p for p in lock["package"]}

    wanted = set()
    for target in targets:
        wanted |= binary_crates(repo, target)
    missing = sorted(wanted - listed)
    for name, version in missing:
        problems.append(f"{name} {version} is compiled into the binary but not in the SBOM")
    unlocked = sorted(c for c in listed if c not in locked)
    for name, version in unlocked:
        problems.append(f"the SBOM lists {name} {version}, which is not in Cargo.lock")

    for c in components(bom):
        key = (c.get("name"), c.get("version"))
        if key in locked and locked[key].get("source", "").startswith("registry+"):
            purl = c.get("purl", "")
            if not purl.startswith(f"pkg:cargo/{key[0]}@{key[1]}"):
                problems.append(f"{key[0]} {key[1]} has purl {purl!r}")

    home = os.path.expanduser("~")
    for path in {os.path.realpath(repo), repo, os.path.realpath(workdir), workdir, home}:
        if path and path != "/" and path in text:
            problems.append(f"the SBOM names the local path {path}")
    if "file:///" in text:
        problems.append("the SBOM names a file:/// URL")

    for p in problems:
        print(f"[check-sbom] FAILED: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    spec = bom.get("specVersion")
    print(f"[check-sbom] ok: CycloneDX {spec}, {len(listed)} components, all in Cargo.lock "
          f"({len(locked)} packages); the {len(wanted)} crates compiled into kopf-audit for "
          f"{', '.join(targets)} (cargo tree -e normal,no-proc-macro) are all listed; "
          f"no local path")


if __name__ == "__main__":
    main()
