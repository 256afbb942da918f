# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""ci/check_layers.py passes on the tree and fails, naming file and line, on
an include that points up a layer or a test helper outside a test."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "ci" / "check_layers.py"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True,
                          text=True)


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_the_tree_passes():
    p = run(ROOT)
    assert p.returncode == 0, p.stderr


def test_an_upward_include_fails_with_its_line(tmp_path):
    write(tmp_path, "core/util/a.h", "#pragma once\n")
    write(tmp_path, "core/engine/e.h", '#include "core/util/a.h"\n')
    write(tmp_path, "harness/run/r.h", '#include "core/engine/e.h"\n')
    assert run(tmp_path).returncode == 0
    write(tmp_path, "core/engine/bad.cc", '// x\n#include <vector>\n#include "harness/run/r.h"\n')
    p = run(tmp_path)
    assert p.returncode == 1
    assert "core/engine/bad.cc:3: includes harness/run/r.h (group harness, above core/engine)" in p.stderr


def test_tests_may_include_anything_but_only_tests_include_helpers(tmp_path):
    write(tmp_path, "baselines/testing.h", "#pragma once\n")
    write(tmp_path, "harness/run/r.h", "#pragma once\n")
    write(tmp_path, "core/engine/engine_test.cc", '#include "baselines/testing.h"\n#include "harness/run/r.h"\n')
    assert run(tmp_path).returncode == 0
    write(tmp_path, "predictors/p.cc", '#include "baselines/testing.h"\n')
    p = run(tmp_path)
    assert p.returncode == 1 and "predictors/p.cc:1: includes the test helper baselines/testing.h" in p.stderr


def test_a_file_in_no_layer_is_refused(tmp_path):
    write(tmp_path, "kernels/opencl/k.h", "#pragma once\n")
    p = run(tmp_path)
    assert p.returncode == 2 and "kernels/opencl/k.h: in no layer" in p.stderr
