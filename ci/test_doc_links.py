# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Every relative link in the repository's Markdown (README.md, docs/,
analysis/METRICS.md, the lab notes) resolves: the file exists and, for a
link with #anchor into Markdown, the heading does (GitHub's anchors)."""

import pathlib
import re

import check_format

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def markdown_files():
    # The files git tracks (or, without git, what .gitignore leaves): ci/check_format.py's list.
    files = [f for f in check_format.tracked(ROOT) if f.endswith(".md")]
    return [f for f in files if not f.startswith("results/")] + [
        p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")
        if p.relative_to(ROOT).as_posix() not in files]


def anchors(path: pathlib.Path) -> set:
    seen, out = {}, set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links():
    bad = []
    for rel in markdown_files():
        path = ROOT / rel
        text = FENCE.sub("", path.read_text())
        for m in LINK.finditer(text):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = path if not file_part else (path.parent / file_part).resolve()
            if not dest.exists():
                bad.append(f"{rel}: link to {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{rel}: link to {target}: no heading with that anchor in {dest.name}")
    return bad


def test_every_markdown_link_resolves():
    bad = broken_links()
    assert not bad, "\n".join(bad)


def test_the_checker_finds_a_broken_link(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "A.md").write_text("# Title here\n[ok](B.md#sub-part) [bad](C.md) [anchor](#nope)\n"
                                            "```\n[in code](D.md)\n```\n")
    (tmp_path / "docs" / "B.md").write_text("# B\n## Sub part\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    bad = broken_links()
    assert bad == ["docs/A.md: link to C.md: no such file",
                   "docs/A.md: link to #nope: no heading with that anchor in A.md"], bad


def test_the_architecture_page_names_every_lane_of_the_engine():
    """docs/ARCHITECTURE.md lists the lanes by the names core/engine/lanes.cc gives them, and their number."""
    names = re.findall(r'case Lane::k\w+:\s*return "([^"]+)";', (ROOT / "core/engine/lanes.cc").read_text())
    enum = re.search(r"enum class Lane[^{]*\{([^}]*)\}", (ROOT / "core/engine/lanes.h").read_text()).group(1)
    assert len(names) == enum.count("=") >= 5, (names, enum)
    page = (ROOT / "docs/ARCHITECTURE.md").read_text()
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    assert f"one of {words[len(names)]} named lanes" in page
    for n in names:
        assert f"`{n}`" in page, n
