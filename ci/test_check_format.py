# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""ci/check_format.py passes on the tree and fails, naming the file, on C++
that clang-format would change and on a source file without the licence
line."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "ci" / "check_format.py"
HEADER = "// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0\n"

pytestmark = pytest.mark.skipif(shutil.which("clang-format") is None,
                                reason="clang-format missing (scripts/install-deps.sh installs it)")


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)


def test_the_tree_passes():
    p = run(ROOT)
    assert p.returncode == 0, p.stderr


def test_unformatted_code_and_a_missing_licence_line_fail(tmp_path):
    shutil.copy(ROOT / ".clang-format", tmp_path / ".clang-format")
    (tmp_path / "a.cc").write_text(HEADER + "int f() {\n  return 1;\n}\n")
    (tmp_path / "tool.py").write_text("#!/usr/bin/env python3\n# Copyright 2026 The moebench authors. "
                                      "SPDX-License-Identifier: Apache-2.0\n")
    assert run(tmp_path).returncode == 0, run(tmp_path).stderr
    (tmp_path / "b.cc").write_text(HEADER + "int   g( ) {return 2;}\n")
    (tmp_path / "c.py").write_text("print(1)\n")
    p = run(tmp_path)
    assert p.returncode == 1
    assert "b.cc: not formatted as .clang-format says" in p.stderr
    assert "c.py:1: expected the licence line" in p.stderr
    assert "a.cc" not in p.stderr
