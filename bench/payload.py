#!/usr/bin/env python
"""The module payload each kueueops.aks module ships, as ansible-core builds it (issue 42, item 6).

Runs one ansible-playbook with a task per module (no argument: each module starts, reads its payload and fails on
its required options or on the missing cluster, which is all that is needed) with ANSIBLE_KEEP_REMOTE_FILES and
pipelining off, so ansible-core leaves every AnsiballZ_<module>.py it built. For each module it reports the file's
size (the zip, deflated and base64-encoded: what reaches the host) and, inside the zip, the collection's
module_utils files and their source size (what Python compiles when the module starts: the payload's cost in CPU).

With ``--baseline-ref REV`` the same is done, in the same run, for the collection as it was at that git commit (git
archive into a temporary collections path), and each row gives both.

    .venv/bin/python bench/payload.py [--baseline-ref REV] [--json FILE] [--keep DIR]
"""
from __future__ import annotations

import argparse
import base64
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
VENV_BIN = os.path.dirname(sys.executable)
MU_PREFIX = "ansible_collections/kueueops/aks/plugins/module_utils/"


def modules(collection):
    folder = os.path.join(collection, "plugins", "modules")
    return sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".py") and not f.startswith("_"))


def kept_payloads(collections_path, names, work):
    """{module: path of the AnsiballZ file ansible-core built for it}."""
    os.makedirs(work, exist_ok=True)
    book = os.path.join(work, "payload.yml")
    tasks = "".join("    - name: %s\n      kueueops.aks.%s: {}\n      ignore_errors: true\n" % (n, n) for n in names)
    with open(book, "w") as handle:
        handle.write("- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n" + tasks)
    tmp = os.path.join(work, "remote-tmp")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_KEEP_REMOTE_FILES="1",
               ANSIBLE_PIPELINING="0", ANSIBLE_REMOTE_TMP=tmp, ANSIBLE_LOCAL_TEMP=os.path.join(work, "local-tmp"),
               ANSIBLE_HOME=os.path.join(work, "ansible-home"), KUBECONFIG=os.path.join(work, "no-kubeconfig"),
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), book], env=env, cwd=work, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    for path in glob.glob(os.path.join(tmp, "*", "AnsiballZ_*.py")):
        out[os.path.basename(path)[len("AnsiballZ_"):-3]] = path
    return out


def measure(path):
    with open(path, "rb") as handle:
        text = handle.read()
    # The zip is the one long base64 string of the wrapper (ZIPDATA before ansible-core 2.19, an argument of
    # _ansiballz_main since).
    runs = re.findall(rb"[A-Za-z0-9+/=]{4096,}", text)
    if not runs:
        raise SystemExit("payload.py: no zip data in %s (ansible-core changed its wrapper?)" % path)
    data = base64.b64decode(max(runs, key=len))
    files, source = 0, 0
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if info.filename.startswith(MU_PREFIX) and info.filename.endswith(".py"):
                files += 1
                source += info.file_size
    return {"payload_kib": round(len(text) / 1024.0, 1), "module_utils_files": files,
            "module_utils_source_kib": round(source / 1024.0, 1)}


def collection_at(ref, root):
    """(collections path, collection folder, commit): kueueops.aks as it was at ``ref``, the git archive of that
    commit in ``root`` (reused while ``root`` holds that commit). bench/run.py's --baseline-ref uses it too."""
    dest = os.path.join(root, "ansible_collections", "kueueops", "aks")
    stamp = os.path.join(root, "ref")
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", ref + "^{commit}"], check=True,
                            capture_output=True, text=True).stdout.strip()
    if os.path.exists(stamp):
        with open(stamp) as handle:
            if handle.read() == commit:
                return root, dest, commit
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(dest)
    archive = subprocess.run(["git", "-C", REPO, "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    with open(stamp, "w") as handle:
        handle.write(commit)
    return root, dest, commit


def table(now, before, ref):
    head = ["module", "payload KiB", "module_utils files", "module_utils source KiB"]
    lines = []
    if before:
        head = ["module", "payload KiB at %s" % ref, "now", "module_utils files at %s" % ref, "now",
                "module_utils source KiB at %s" % ref, "now"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for name in sorted(set(now) | set(before or {})):
        n, b = now.get(name) or {}, (before or {}).get(name) or {}
        if before:
            cells = [b.get("payload_kib"), n.get("payload_kib"), b.get("module_utils_files"),
                     n.get("module_utils_files"), b.get("module_utils_source_kib"), n.get("module_utils_source_kib")]
        else:
            cells = [n.get("payload_kib"), n.get("module_utils_files"), n.get("module_utils_source_kib")]
        lines.append("| %s | %s |" % (name, " | ".join("-" if c is None else str(c) for c in cells)))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-ref", help="also measure the collection as it was at this git commit")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--keep", help="build in this folder and leave the AnsiballZ files there (default: a "
                                       "temporary folder, removed)")
    args = parser.parse_args(argv)
    collections = os.path.join(os.path.dirname(VENV_BIN), "collections")
    if not os.path.isdir(os.path.join(collections, "ansible_collections", "kueueops", "aks")):
        raise SystemExit("payload.py: run with the project venv's Python (make venv installs the collection)")
    with tempfile.TemporaryDirectory(prefix="kueueops-payload-") as work:
        work = args.keep or work
        names = modules(REPO)
        now = {n: measure(p) for n, p in kept_payloads(collections, names, os.path.join(work, "now")).items()}
        before = None
        if args.baseline_ref:
            root, dest, _commit = collection_at(args.baseline_ref, os.path.join(work, "before", "collections"))
            built = kept_payloads(root, modules(dest), os.path.join(work, "before"))
            before = {n: measure(p) for n, p in built.items()}
    missing = sorted(set(names) - set(now))
    if missing:
        raise SystemExit("payload.py: ansible-core built no payload for %s" % ", ".join(missing))
    print(table(now, before, args.baseline_ref))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"now": now, "baseline": before, "baseline_ref": args.baseline_ref}, handle, indent=1,
                      sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
