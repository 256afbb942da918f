# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Which numbers of a testbed profile a screen varies, and over what range (docs/TESTBEDS.md, "Screening").

A profile says where each number comes from: a `# [tag]` comment on its line ([spec], [spec-derived], [paper],
[machine], [assumption], [fitted]) or, for a [[stack]], [[cpu_kernel]] or [[contention]] entry, its `evidence`
key. A number the papers or the datasheets state is a fact of the testbed and is not screened; every other number
(an assumption, a fit that is not one of the region's [[unknown]] entries, a number with no stated source) is
screened: scripts/testbed-region --screen moves it alone to each end of its screening range, solves the region's
solved keys there on the baseline evidence and judges every claim. The keys whose move changes a verdict are the
ones the region must carry as unknowns (with a sourced range); the others are shown not to matter.

The screening range is an assumption of the screen, said as such: half to twice the committed value (an
efficiency or a share at most 1; a slowdown factor from 1, none, to twice its excess). It is wide on purpose: a
key that moves nothing over a factor of two either way is not worth a sourced range. A zero is not screened (half
and twice of it are itself); the table says so."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from inputs import PROFILE_ENTRIES as ENTRIES, PROFILE_NUMBER as NUMBER, PROFILE_SECTIONS as SECTIONS

FACT_TAGS = ("spec", "spec-derived", "paper", "machine")
STRUCTURE = ("count", "sockets", "cores")  # what the machine is, not a number to estimate


@dataclass
class Candidate:
    key: str  # as scripts/fit-testbed names it: cpu.gemm_efficiency, stack.ktransformers.layer_overhead_us
    value: float
    line: int  # 1-based, in the profile
    source: str  # the tag or the entry's evidence ("" when none is stated)
    integer: bool  # written without a fraction or exponent: the screen's ends are whole numbers too
    screened: bool = False
    why: str = ""  # why it is not screened
    low: float = 0.0
    high: float = 0.0


class _Block:
    """The [section] or [[entry]] a line of the profile is in, and the key prefix its numbers take."""

    def __init__(self, kind: str, array: bool):
        self.kind, self.array, self.ident, self.dtype, self.evidence = kind, array, None, None, ""

    def prefix(self) -> str | None:
        if not self.array:
            return self.kind if self.kind in SECTIONS else None
        if self.kind not in ENTRIES or self.ident is None:
            return None
        return ".".join([self.kind, self.ident] + ([self.dtype] if self.dtype else []))


def _blocks(text: str) -> list:
    """(block, line number, field, number token, comment) for every `field = number` line of the profile."""
    out, block = [], _Block("", False)
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^\[(\[)?\s*([\w.-]+)\s*\]?\]", line)
        if m:
            block = _Block(m.group(2), bool(m.group(1)))
            continue
        if block.array and block.kind in ENTRIES:
            m = re.match(rf'^{ENTRIES[block.kind]}\s*=\s*"([^"]+)"', line)
            block.ident = m.group(1) if m else block.ident
            m = re.match(r'^dtype\s*=\s*"([^"]+)"', line)
            block.dtype = m.group(1) if m else block.dtype
            m = re.match(r'^evidence\s*=\s*"([^"]+)"', line)
            block.evidence = m.group(1) if m else block.evidence
        m = re.match(rf"^(\w+)\s*=\s*({NUMBER})[ \t]*(#.*)?$", line)
        if m:
            out.append((block, n, m.group(1), m.group(2), m.group(3) or ""))
    return out


def screen_range(key: str, value: float, integer: bool) -> tuple:
    field = key.split(".")[-1]
    if key.startswith("contention."):  # a slowdown factor: from none (1) to twice its excess
        return 1.0, 1.0 + 2.0 * (value - 1.0)
    low, high = value / 2.0, value * 2.0
    if field.endswith("efficiency") or field.endswith("share"):
        high = min(high, 1.0)
    if integer:
        low, high = float(max(1, round(low))), float(round(high))
    return low, high


def candidates(text: str, unknown_keys, tied_keys=()) -> list:
    """Every number of the profile's [cpu], [gpu], [link] sections and [[stack]], [[cpu_kernel]], [[contention]]
    entries, each with whether the screen varies it and over what range, in the profile's order. Entries'
    evidence applies to their numbers unless a line's own tag says otherwise; the dtype of a [[cpu_kernel]]
    entry is part of its key when it has one (cpu_kernel.<family>.<dtype>.<field>, as scripts/fit-testbed). A key
    in `tied_keys` moves with an unknown (its `tied`) and is not screened alone."""
    out, blocks = [], _blocks(text)
    for block, n, field, token, comment in blocks:
        prefix = block.prefix()
        if prefix is None:
            continue
        key = f"{prefix}.{field}"
        tags = re.findall(r"\[([a-z-]+)\]", comment)
        source = tags[0] if tags else block.evidence
        value = float(token.replace("_", ""))
        integer = not re.search(r"[.eE]", token)
        c = Candidate(key, value, n, source, integer)
        # A [[cpu_kernel]] entry's number may be named with its dtype or without (the family's first entry).
        bare = f"{block.kind}.{block.ident}.{field}" if block.dtype else key
        if key in unknown_keys or bare in unknown_keys:
            c.why = "an [[unknown]] of the region"
        elif key in tied_keys or bare in tied_keys:
            c.why = "tied to an [[unknown]] of the region"
        elif field in STRUCTURE and block.kind in SECTIONS:
            c.why = "what the machine is"
        elif not math.isfinite(value):
            c.why = "not a finite number"
        elif source in FACT_TAGS:
            c.why = f"a fact ([{source}])"
        elif value <= 0 or (key.startswith("contention.") and value <= 1):
            c.why = "zero: half and twice of it are itself" if value == 0 else "no excess over 1 to screen"
        else:
            c.screened = True
            c.low, c.high = screen_range(key, value, integer)
            if not c.low < c.high:
                c.screened, c.why = False, "its screening range is a single value"
        out.append(c)
    return out
