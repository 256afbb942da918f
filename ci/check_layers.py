#!/usr/bin/env python3
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The layers of the source tree point one way (docs/ARCHITECTURE.md,
"Layers"). Every #include "a/b.h" of a C++ or CUDA file is checked: a file
may include its own group and the groups its group rests on (transitively),
never one above. Tests (*_test.cc) and the test helpers sit above every
layer: they may include anything, and nothing else may include a test
helper.

Usage: ci/check_layers.py [--root DIR]. Exit 0 when every include points
down, 1 listing each one that does not (file:line, what it includes, the
groups it may include), 2 on a file in no group.
"""

import argparse
import pathlib
import re
import sys

# Each group and the groups it rests on directly, lowest first. A path
# belongs to the group of its longest matching prefix.
LAYERS = {
    "core/util": [],
    "core/testing": ["core/util"],
    "core/config": ["core/util"],
    "core/trace": ["core/config"],
    "core/results": ["core/config"],
    "core/policy": ["core/config"],
    "core/scheduler": ["core/trace"],
    "core/experiment": ["core/scheduler"],
    "kernels/cpu": ["core/config"],
    "kernels/cuda": ["kernels/cpu"],
    "core/engine": ["core/experiment", "core/results", "core/policy"],
    "workloads": ["core/experiment", "kernels/cpu"],
    "predictors": ["core/engine"],
    "baselines": ["predictors"],
    "harness": ["baselines", "workloads", "kernels/cuda"],
    "tools": ["harness"],
    "fuzz": ["tools"],
}
# Test helpers: included by tests only.
TEST_HELPERS = ("core/testing/", "baselines/testing.h")
SOURCE = re.compile(r"\.(h|cc|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def group_of(path):
    best = None
    for g in LAYERS:
        if (path == g or path.startswith(g + "/")) and (best is None or len(g) > len(best)):
            best = g
    return best


def allowed(group):
    seen, todo = {group}, [group]
    while todo:
        for d in LAYERS[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def is_test(path):
    return path.endswith("_test.cc") or path.startswith(TEST_HELPERS)


def check(root):
    root = pathlib.Path(root)
    bad, unknown = [], []
    tops = sorted({g.split("/")[0] for g in LAYERS})
    for top in tops:
        for f in sorted((root / top).rglob("*")):
            rel = f.relative_to(root).as_posix()
            if not f.is_file() or not SOURCE.search(rel):
                continue
            g = group_of(rel)
            if g is None:
                unknown.append(rel)
                continue
            ok = allowed(g)
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m or not (root / m.group(1)).is_file():
                    continue  # a system header or one beside the file
                inc = m.group(1)
                if inc.startswith(TEST_HELPERS) and not is_test(rel):
                    bad.append(f"{rel}:{n}: includes the test helper {inc} (only tests may)")
                    continue
                if is_test(rel):
                    continue
                h = group_of(inc)
                if h is not None and h not in ok:
                    bad.append(f"{rel}:{n}: includes {inc} (group {h}, above {g}); "
                               f"{g} may include {', '.join(sorted(ok))}")
    return bad, unknown


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent)
    args = ap.parse_args()
    bad, unknown = check(args.root)
    for u in unknown:
        print(f"{u}: in no layer of ci/check_layers.py (add its folder to LAYERS)", file=sys.stderr)
    for b in bad:
        print(b, file=sys.stderr)
    if unknown:
        return 2
    if bad:
        print(f"{len(bad)} include(s) point up a layer (docs/ARCHITECTURE.md, \"Layers\")", file=sys.stderr)
        return 1
    print(f"layers: every include points down ({len(LAYERS)} groups)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
