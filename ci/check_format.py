#!/usr/bin/env python3
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The tree's format and headers, run by `make test`:

- every C++ and CUDA file git tracks is formatted as .clang-format says
  (clang-format --dry-run --Werror; 100 columns; fix with `make format`);
- every source file (C++, CUDA, Python, shell, CMake, Makefile, scripts with
  a #!) has the licence line in its first three lines:
      // Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
  (# instead of // outside C++), the convention of LICENSE.

Lab notes under docs/measurements/ and recorded data are not checked.
Usage: ci/check_format.py [--root DIR] [--clang-format BIN] [--fix].
Exit 0 when all pass, 1 listing each file that does not, 2 when
clang-format is missing."""

import argparse
import pathlib
import re
import shutil
import subprocess
import sys

SPDX = "SPDX-License-Identifier: Apache-2.0"
SKIP = ("docs/measurements/", "results/", "fuzz/corpus", "fuzz/regressions")
CXX = re.compile(r"\.(h|cc|cu|cuh)$")
# What .gitignore leaves out (build trees, results, trained models, caches), for a tree without git.
IGNORED = re.compile(r"^(build(-[^/]*)?/|results/|models/|\.git/)|(^|/)(__pycache__|\.pytest_cache)/")


def tracked(root):
    out = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout: the files under root but what .gitignore leaves out
        return sorted(rel for rel in (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
                      if not IGNORED.search(rel))
    return out.stdout.split()


def is_source(root, rel):
    name = rel.rsplit("/", 1)[-1]
    if CXX.search(name) or name.endswith((".py", ".sh", ".cmake", ".cc.in")) or name in ("CMakeLists.txt",
                                                                                          "Makefile"):
        return True
    try:
        with open(root / rel, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent, type=pathlib.Path)
    ap.add_argument("--clang-format", default="clang-format")
    ap.add_argument("--fix", action="store_true", help="format the C++ files in place (the headers stay yours)")
    args = ap.parse_args()
    root = args.root
    files = [f for f in tracked(root) if not f.startswith(SKIP) and (root / f).is_file()]
    bad = []
    for f in files:
        if not is_source(root, f):
            continue
        head = (root / f).read_text(errors="replace").split("\n", 3)[:3]
        if not any(SPDX in line for line in head):
            bad.append(f"{f}:1: expected the licence line ({SPDX}) in the first three lines, found none")
    cxx = [f for f in files if CXX.search(f)]
    cf = shutil.which(args.clang_format)
    if cf is None:
        print(f"check_format: expected {args.clang_format} on PATH (Debian package clang-format; "
              f"scripts/install-deps.sh installs it), found none", file=sys.stderr)
        return 2
    if args.fix:
        subprocess.run([cf, "-i", *cxx], cwd=root, check=True)
    for i in range(0, len(cxx), 50):  # a batch per call keeps the command line short
        batch = cxx[i:i + 50]
        p = subprocess.run([cf, "--dry-run", "--Werror", *batch], cwd=root, capture_output=True, text=True)
        if p.returncode != 0:
            for f in sorted(set(re.findall(r"^([^\s:]+):\d+:\d+: error", p.stderr, re.M))):
                bad.append(f"{f}: not formatted as .clang-format says (make format fixes it)")
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"check_format: {len(bad)} file(s) fail", file=sys.stderr)
        return 1
    print(f"check_format: {len(cxx)} C++/CUDA files formatted, every source file has the licence line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
