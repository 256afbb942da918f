# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Read and write moebench routing traces with numpy alone.

A trace is a safetensors file (docs/TRACE_FORMAT.md): an 8-byte
little-endian header length, a JSON header, then raw little-endian tensors.
Large tensors are memory-mapped, never read whole.

    import moebench_trace as mt
    t = mt.read("trace.safetensors")
    t.topk_ids.shape            # (T, L, k)
    for s in range(t.num_sequences):
        ids = t.sequence(s)["topk_ids"]        # (tokens of s, L, k)

    mt.write("out.safetensors", topk_ids=..., topk_weights=..., prompt_len=[...],
             decode_len=[...], model="mixtral-8x7b", routed_experts=8)

Every problem with a file is a TraceError that names the file and what was
expected and found, like the C++ reader's messages.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

FORMAT = "moebench-trace"
FORMAT_VERSION = "1"
HOLE_ID = -1  # every id of a hole row (a (token, layer) a logger dropped; docs/TRACE_FORMAT.md, "Holes")
MAX_HEADER = 100 << 20

_DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
    "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32, "F64": np.float64,
    "I64": np.int64, "U64": np.uint64,
}
_NAMES = {np.dtype(v).str: k for k, v in _DTYPES.items()}


class TraceError(Exception):
    """A trace file is missing, malformed, or inconsistent."""


def _bad(path, where, expected, found):
    prefix = f"{path}: {where}: " if where else f"{path}: "
    raise TraceError(f"{prefix}expected {expected}, found {found}")


def _require_replaceable(path: str) -> None:
    """The rename that makes a write atomic replaces whatever is at `path`: only a new file or a regular file may
    be replaced (a device, a FIFO, a folder or a link is refused, as the C++ writer refuses them)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    import stat
    if not stat.S_ISREG(st.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode)
                else "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a character device"
                if stat.S_ISCHR(st.st_mode) else "something that is not a regular file")
        raise TraceError(f"{path}: expected a new file or a regular file to replace, found {kind}; nothing was "
                         f"written")


def read_safetensors(path: str):
    """Returns (tensors, metadata): tensors maps name -> read-only memory-mapped array."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        _bad(path, "", "a readable safetensors file", e.strerror)
    if size < 8:
        _bad(path, "", "at least 8 bytes (the header size)", f"{size} bytes")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_HEADER or n > size - 8:
            _bad(path, "header size", f"at most {min(MAX_HEADER, size - 8)} bytes", f"{n} bytes")
        raw = f.read(n)
    # Refused as the C++ reader refuses them (core/trace/safetensors.cc): JSON
    # parsers differ on a byte-order mark and on what follows a NUL.
    if raw.startswith(b"\xef\xbb\xbf"):
        _bad(path, "header", "JSON text without a byte-order mark", "a UTF-8 byte-order mark")
    nul = raw.find(b"\0")
    if nul >= 0:
        _bad(path, "header", "JSON text (padded with spaces, never NUL)", f"a NUL byte at byte {nul} of the header")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        _bad(path, "header", "a JSON object", f"invalid JSON ({e})")
    if not isinstance(header, dict):
        _bad(path, "header", "a JSON object", type(header).__name__)
    data_start, data_size = 8 + n, size - 8 - n
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        _bad(path, "__metadata__", "an object of strings", repr(metadata)[:60])
    spans, tensors = [], {}
    for name, info in header.items():
        where = f"tensor '{name}'"
        if not isinstance(info, dict):
            _bad(path, where, "an object with dtype, shape, data_offsets", type(info).__name__)
        dtype = _DTYPES.get(info.get("dtype"))
        if dtype is None:
            _bad(path, where, "a safetensors dtype (F32, F16, I32, ...)", repr(info.get("dtype")))
        shape = info.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            _bad(path, where + " shape", "non-negative integers", repr(shape))
        off = info.get("data_offsets")
        if not (isinstance(off, list) and len(off) == 2 and all(isinstance(x, int) and x >= 0 for x in off)):
            _bad(path, where, "'data_offsets' = [begin, end]", repr(off))
        begin, end = off
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if end < begin or end - begin != nbytes:
            _bad(path, where, f"data_offsets spanning {nbytes} bytes", f"[{begin}, {end}]")
        if end > data_size:
            _bad(path, where, f"data inside the file's {data_size} data bytes",
                 f"data_offsets ending at {end} (truncated file?)")
        spans.append((begin, end, name))
        count = math.prod(shape)
        if count == 0:
            tensors[name] = np.zeros(shape, dtype=np.dtype(dtype).newbyteorder("<"))
        else:
            tensors[name] = np.memmap(path, dtype=np.dtype(dtype).newbyteorder("<"), mode="r",
                                      offset=data_start + begin, shape=tuple(shape))
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            _bad(path, f"tensor '{name}'", f"data starting at byte {pos} (tensors must be contiguous)",
                 f"data_offsets starting at {begin}")
        pos = end
    if pos != data_size:
        _bad(path, "data section", f"{pos} bytes as the header describes", f"{data_size} bytes")
    return tensors, metadata


def write_safetensors(path: str, tensors: Dict[str, np.ndarray], metadata: Dict[str, str]):
    """Writes tensors in the given order; the data section starts 64-byte aligned.
    Written to a temporary file and renamed, so a killed writer leaves nothing."""
    header, arrays, pos = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        key = np.dtype(a.dtype).newbyteorder("<").str
        if key not in _NAMES:
            raise TraceError(f"{path}: tensor '{name}': expected a safetensors dtype, found {a.dtype}")
        a = a.astype(np.dtype(a.dtype).newbyteorder("<"), copy=False)
        header[name] = {"dtype": _NAMES[key], "shape": list(a.shape), "data_offsets": [pos, pos + a.nbytes]}
        pos += a.nbytes
        arrays.append(a)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((-(8 + len(text))) % 64)
    _require_replaceable(path)
    tmp = f"{path}.tmp.{os.getpid()}.0"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text.encode("utf-8"))
        for a in arrays:
            f.write(a.tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass
class Trace:
    path: str
    metadata: Dict[str, str]
    topk_ids: np.ndarray                 # int32 [T, L, k], rank order
    topk_weights: np.ndarray             # float32 [T, L, k]
    prompt_len: np.ndarray               # int32 [S]
    decode_len: np.ndarray               # int32 [S]
    router_probs: Optional[np.ndarray] = None       # float16 [T, L, E]
    router_topp_ids: Optional[np.ndarray] = None    # int32 [T, L, p]
    router_topp_probs: Optional[np.ndarray] = None  # float16 [T, L, p]
    gate_input: Optional[np.ndarray] = None          # float16 [T, L, H]
    gate_weight: Optional[np.ndarray] = None         # float32 [L, E, H]
    gate_bias: Optional[np.ndarray] = None           # float32 [L, E]
    selection_bias: Optional[np.ndarray] = None      # float32 [L, E]
    offsets: np.ndarray = field(default=None)        # first token of each sequence

    @property
    def num_sequences(self) -> int:
        return int(self.prompt_len.shape[0])

    @property
    def moe_layers(self) -> int:
        return int(self.metadata["moe_layers"])

    @property
    def routed_experts(self) -> int:
        return int(self.metadata["routed_experts"])

    @property
    def top_k(self) -> int:
        return int(self.metadata["top_k"])

    def sequence(self, s: int) -> Dict[str, np.ndarray]:
        """Views of sequence s's tokens (prompt first)."""
        a, b = int(self.offsets[s]), int(self.offsets[s + 1])
        out = {"topk_ids": self.topk_ids[a:b], "topk_weights": self.topk_weights[a:b]}
        for name in ("router_probs", "router_topp_ids", "router_topp_probs", "gate_input"):
            v = getattr(self, name)
            if v is not None:
                out[name] = v[a:b]
        return out

    @property
    def hole_rows(self) -> int:
        """(token, layer) rows a logger dropped (every id HOLE_ID, every weight 0; docs/TRACE_FORMAT.md)."""
        return int(self.metadata.get("holes", "0"))

    def holes(self) -> np.ndarray:
        """bool [T, L]: True where the row is a hole."""
        return np.asarray(self.topk_ids)[..., 0] == HOLE_ID

    def popularity(self) -> np.ndarray:
        """Activation counts [L, E] over all tokens (hole rows count nothing)."""
        L, E = self.moe_layers, self.routed_experts
        counts = np.zeros((L, E), dtype=np.int64)
        ids = np.asarray(self.topk_ids)
        for layer in range(L):
            col = ids[:, layer, :].ravel()
            counts[layer] = np.bincount(col[col >= 0], minlength=E)
        return counts


def read(path: str, verify: bool = True) -> Trace:
    """Opens a trace file. With verify, checks ids and weights like the C++ reader."""
    t, meta = read_safetensors(path)

    def need(key):
        if key not in meta:
            _bad(path, f"__metadata__.{key}", "a value", "none")
        return meta[key]

    if need("format") != FORMAT:
        _bad(path, "__metadata__.format", f"'{FORMAT}'", f"'{meta['format']}'")
    if need("format_version") != FORMAT_VERSION:
        _bad(path, "__metadata__.format_version", f"'{FORMAT_VERSION}'", f"'{meta['format_version']}'")
    L, E, k, H = (int(need(x)) for x in ("moe_layers", "routed_experts", "top_k", "h_trace"))

    def tensor(name, dtype, shape, required=True):
        if name not in t:
            if required:
                _bad(path, f"tensor '{name}'", "present", "none")
            return None
        a = t[name]
        if a.dtype != np.dtype(dtype):
            _bad(path, f"tensor '{name}'", f"dtype {_NAMES[np.dtype(dtype).str]}", f"dtype {_NAMES.get(a.dtype.str, a.dtype)}")
        if list(a.shape) != list(shape):
            _bad(path, f"tensor '{name}'", f"shape {list(shape)}", f"shape {list(a.shape)}")
        return a

    if "seq_prompt_len" not in t:
        _bad(path, "tensor 'seq_prompt_len'", "present", "none")
    S = t["seq_prompt_len"].shape[0]
    prompt = np.asarray(tensor("seq_prompt_len", np.int32, [S]))
    decode = np.asarray(tensor("seq_decode_len", np.int32, [S]))
    T = int(prompt.sum() + decode.sum())
    trace = Trace(path=path, metadata=meta,
                  topk_ids=tensor("topk_ids", np.int32, [T, L, k]),
                  topk_weights=tensor("topk_weights", np.float32, [T, L, k]),
                  prompt_len=prompt, decode_len=decode)
    trace.offsets = np.concatenate([[0], np.cumsum(prompt + decode)])
    trace.router_probs = tensor("router_probs", np.float16, [T, L, E], required=False)
    if "router_topp_ids" in t:
        p = t["router_topp_ids"].shape[-1]
        trace.router_topp_ids = tensor("router_topp_ids", np.int32, [T, L, p])
        trace.router_topp_probs = tensor("router_topp_probs", np.float16, [T, L, p])
    if H > 0:
        trace.gate_input = tensor("gate_input", np.float16, [T, L, H])
    if "gate_weight" in t:
        trace.gate_weight = tensor("gate_weight", np.float32, [L, E, H])
        trace.gate_bias = tensor("gate_bias", np.float32, [L, E])
        trace.selection_bias = tensor("selection_bias", np.float32, [L, E])
    if verify and T > 0:
        ids = np.asarray(trace.topk_ids)
        w = np.asarray(trace.topk_weights)
        # Holes: rows whose every id is HOLE_ID and every weight 0, only in a file whose metadata counts them.
        hole = np.zeros(ids.shape[:2], dtype=bool)
        if "holes" in meta:
            if H > 0:
                _bad(path, "__metadata__.holes", "no holes in a trace with gate inputs (h_trace > 0)",
                     f"{meta['holes']} with h_trace {H}")
            hole = ids[..., 0] == HOLE_ID
            mixed = np.argwhere(hole & ((ids != HOLE_ID).any(axis=-1) | (w != 0).any(axis=-1)))
            if len(mixed):
                tok, layer = mixed[0]
                _bad(path, f"topk_ids[token {tok}, layer {layer}]",
                     f"a hole (every id {HOLE_ID} and every weight 0) or expert ids in [0, {E})", "a mixed row")
            if int(hole.sum()) != int(meta["holes"]):
                _bad(path, "__metadata__.holes", f"the number of hole rows ({int(hole.sum())})", meta["holes"])
            ids = np.where(hole[..., None], np.arange(ids.shape[-1], dtype=np.int32), ids)  # checked as distinct ids
        bad = np.argwhere((ids < 0) | (ids >= E))
        if len(bad):
            tok, layer, j = bad[0]
            _bad(path, f"topk_ids[token {tok}, layer {layer}]", f"expert ids in [0, {E})", int(ids[tok, layer, j]))
        srt = np.sort(ids, axis=-1)
        dup = np.argwhere((srt[..., 1:] == srt[..., :-1]).any(axis=-1))
        if len(dup):
            tok, layer = dup[0]
            _bad(path, f"topk_ids[token {tok}, layer {layer}]", "distinct expert ids", "a repeated id")
        badw = np.argwhere(~np.isfinite(w) | (w < 0))
        if len(badw):
            tok, layer, j = badw[0]
            _bad(path, f"topk_weights[token {tok}, layer {layer}]", "finite non-negative weights", float(w[tok, layer, j]))
    return trace


def write(path: str, *, topk_ids, topk_weights, prompt_len, decode_len, model: str, routed_experts: int,
          routing: str = "softmax-topk", router_probs=None, gate_input=None, gate_weight=None,
          gate_bias=None, selection_bias=None, model_hash: str = "", source: Optional[dict] = None,
          n_group: int = 1, topk_group: int = 1, norm_topk_prob: bool = False,
          routed_scaling_factor: float = 1.0):
    """Writes a trace file that the C++ reader accepts (same tensor names and metadata)."""
    ids = np.asarray(topk_ids, dtype=np.int32)
    T, L, k = ids.shape
    H = 0 if gate_input is None else int(np.asarray(gate_input).shape[-1])
    tensors = {
        "topk_ids": ids,
        "topk_weights": np.asarray(topk_weights, dtype=np.float32),
        "seq_prompt_len": np.asarray(prompt_len, dtype=np.int32),
        "seq_decode_len": np.asarray(decode_len, dtype=np.int32),
    }
    if gate_weight is not None:
        tensors["gate_weight"] = np.asarray(gate_weight, dtype=np.float32)
        tensors["gate_bias"] = np.asarray(gate_bias if gate_bias is not None else np.zeros((L, routed_experts)), dtype=np.float32)
        tensors["selection_bias"] = np.asarray(
            selection_bias if selection_bias is not None else np.zeros((L, routed_experts)), dtype=np.float32)
    if router_probs is not None:
        tensors["router_probs"] = np.asarray(router_probs, dtype=np.float16)
    if gate_input is not None:
        tensors["gate_input"] = np.asarray(gate_input, dtype=np.float16)
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "model": model, "model_hash": model_hash,
        "moe_layers": str(L), "routed_experts": str(routed_experts), "top_k": str(k), "h_trace": str(H),
        "routing": routing, "n_group": str(n_group), "topk_group": str(topk_group),
        "norm_topk_prob": "true" if norm_topk_prob else "false",
        "routed_scaling_factor": repr(float(routed_scaling_factor)),
        "source": json.dumps(source or {"writer": "moebench_trace.py"}),
    }
    holes = int((ids[..., 0] == HOLE_ID).sum()) if ids.size else 0
    if holes:
        meta["holes"] = str(holes)  # rows whose every id is HOLE_ID and every weight 0
    write_safetensors(path, tensors, meta)
