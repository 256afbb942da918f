# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Follows docs/ADDING_A_GPU_TASK.md: every file it names exists, its row is in the table of task kinds
(core/engine/lanes.cc), and docs/GPU.md's table of task kinds lists exactly that table's kinds, in its order, with the
same class and demand."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "ADDING_A_GPU_TASK.md"
LANES = ROOT / "core" / "engine" / "lanes.cc"
CLASS = {"kCompute": "compute", "kWeights": "weights", "kActivations": "activations", "kKv": "kv"}


def cpp_rows(text: str) -> list:
    """(name, class, demand) of each row of kTaskKinds, in order."""
    body = text[text.index("kTaskKinds[] = {"):]
    body = body[:body.index("};")]
    return [(n, CLASS[c], d == "true")
            for n, c, d in re.findall(r'\{TaskKind::k\w+, "([a-z0-9-]+)", C::(k\w+), (true|false)\}', body)]


def doc_rows(text: str) -> list:
    """(name, class, demand) of each row of GPU.md's task-kind table."""
    section = text[text.index("## The task kinds"):]
    section = section[:section.index("\n## ", 5)]
    return [(n, c, d == "yes") for n, c, d in re.findall(r"^\| `([a-z0-9-]+)` \| (\w+) \| (yes|no) \|", section, re.M)]


def test_every_named_file_exists():
    paths = set(re.findall(r"`((?:core|kernels|harness|baselines)/[A-Za-z0-9_./-]+\.(?:cc|h|cu))`", GUIDE.read_text()))
    assert len(paths) >= 12, paths
    assert [p for p in paths if not (ROOT / p).is_file()] == []


def test_the_guides_row_is_in_the_table():
    row = re.search(r"```cpp\n\s*(.+?)\n\s*```", GUIDE.read_text()).group(1).strip()
    assert row in LANES.read_text()


def test_gpu_md_lists_the_tables_kinds_in_order():
    rows = cpp_rows(LANES.read_text())
    assert len(rows) >= 16
    assert doc_rows((ROOT / "docs" / "GPU.md").read_text()) == rows


def test_a_kind_missing_from_the_doc_is_found():
    cpp = '{TaskKind::kA, "a", C::kCompute, false},\n{TaskKind::kB, "b", C::kKv, true},\n'
    rows = cpp_rows("kTaskKinds[] = {\n" + cpp + "};")
    assert rows == [("a", "compute", False), ("b", "kv", True)]
    doc = "## The task kinds\n\n| kind | class | demand | x |\n| --- |\n| `a` | compute | no | y |\n\n## Next\n"
    assert doc_rows(doc) == [("a", "compute", False)] != rows
