# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Checked input and output for the analysis tools and scripts, with the promises the C++ readers keep
(docs/USAGE.md, "Reliability"): what a path is, is checked before it is opened (a FIFO, a device or a folder is
named, never read); text is UTF-8; every number read is finite and in its range; every error names the file, the
line and the key, and a tool prints it as one line and exits 2 instead of a traceback; an output path is checked
before the work that fills it, and written whole or not at all; output that cannot be written exits non-zero.

Plain Python (no pandas): the scripts under scripts/ import it too."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import pathlib
import signal
import stat
import sys
import tempfile

MAX_BYTES = 256 << 20  # the largest file read whole

# How the profile tools (scripts/fit-testbed, scripts/testbed-region, analysis/screening.py) name a hardware
# profile's numbers: a key of a section (cpu.mem_bw_gbps) or of an entry named by its identifying field
# (stack.<name>.<key>, cpu_kernel.<family>[.<dtype>].<key>, contention.<term>.<key>).
PROFILE_SECTIONS = ("cpu", "gpu", "link")
PROFILE_ENTRIES = {"stack": "name", "cpu_kernel": "family", "contention": "term"}
# A TOML number as a profile writes it: decimal with digit separators (6_474), exponent, sign, inf, nan. The
# whole token is read and replaced (a pattern without '_' once read 6_474 as 6 and wrote 3.159_474).
PROFILE_NUMBER = r"[-+]?(?:inf|nan|[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][-+]?[0-9_]+)?)"


class InputError(ValueError):
    """A bad input, said as 'WHERE: expected ..., found ...' (a ValueError: callers that refuse bad values
    catch it too)."""


def kind(path) -> str:
    """What `path` is, as an error message says it (the words of core/util/paths.h, file_kind); never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "a symbolic link to nothing" if os.path.islink(path) else "no such file"
    except OSError as e:
        return f"an unreadable path ({e.strerror})"
    m = st.st_mode
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(m):
            return name
    return "something that is not a regular file"


def shown(text, limit: int = 60) -> str:
    """`text` for an error message: control characters and undecodable bytes escaped, cut at `limit`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "backslashreplace")
    s = str(text)
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s[:limit])
    return out + ("..." if len(s) > limit else "")


def read_text(path, what: str) -> str:
    """The text of a regular file of at most MAX_BYTES, UTF-8. `what` says what was expected ("a replay CSV")."""
    path = pathlib.Path(path)
    k = kind(path)
    if k != "a regular file":
        raise InputError(f"{path}: expected {what} (a regular file), found {k}")
    try:
        # O_NONBLOCK: a FIFO swapped in after the check is not waited on.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise InputError(f"{path}: expected {what} (a readable file), found {e.strerror.lower()}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise InputError(f"{path}: expected {what} (a regular file), found {kind(path)}")
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise InputError(f"{path}: expected {what} of at most {MAX_BYTES >> 20} MiB, found more")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"{path}:{line}: expected {what} (UTF-8 text), found byte 0x{data[e.start]:02x} "
                         f"('{shown(data[max(0, e.start - 20):e.start + 10])}')") from None


def read_csv(path, what: str, columns=()) -> list:
    """(line, row) of each row of a CSV file with a header holding `columns`."""
    text = read_text(path, what)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise InputError(f"{path}:1: expected {what} with the columns {', '.join(columns)}, found "
                             f"{len(missing)} missing ({', '.join(missing[:4])})")
        rows = []
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise InputError(f"{path}:{reader.line_num}: expected {len(header)} fields as the header has, "
                                 f"found {len(header) + len(row.get(None) or []) - sum(v is None for v in row.values())}")
            rows.append((reader.line_num, row))
    except csv.Error as e:
        raise InputError(f"{path}: expected {what} (CSV), found {e}") from None
    return rows


def read_jsonl(path, what: str) -> list:
    """(line, object) of each non-blank line of a JSONL file; every line a JSON object."""
    out = []
    for no, line in enumerate(read_text(path, what).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_reject_constant)
        except ValueError as e:
            raise InputError(f"{path}:{no}: expected {what} (a JSON object per line), found '{shown(line)}' "
                             f"({e})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{no}: expected {what} (a JSON object per line), found '{shown(line)}'")
        out.append((no, obj))
    return out


def read_json(path, what: str):
    text = read_text(path, what)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:
        raise InputError(f"{path}: expected {what} (JSON), found {e}") from None


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def number(value, where: str, key: str, *, low=None, high=None, above=None, integer=False) -> float:
    """`value` (a number or its text) as a finite float (or int) in range; else InputError at `where` and `key`.
    low/high: inclusive bounds; above: an exclusive lower bound."""
    rule = "a whole number" if integer else "a finite number"
    if above is not None:
        rule += f" > {above:g}"
    if low is not None:
        rule += f" >= {low:g}"
    if high is not None:
        rule += f" <= {high:g}"
    try:
        if isinstance(value, bool):
            raise ValueError
        x = float(value)
        if integer:
            if x != int(x):
                raise ValueError
            x = int(x)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}: key '{key}': expected {rule}, found '{shown(value)}'") from None
    if not math.isfinite(x) or (low is not None and x < low) or (high is not None and x > high) or (
            above is not None and x <= above):
        raise InputError(f"{where}: key '{key}': expected {rule}, found {value}")
    return x


def distinct_files(paths, what: str) -> list:
    """The paths, refused when two name one file (a repeat given twice is not two repeats)."""
    seen = {}
    for p in map(pathlib.Path, paths):
        try:
            st = os.stat(p)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            continue  # said by the reader
        if ident in seen:
            raise InputError(f"{p}: expected {what}, each once, found the same file as {seen[ident]}")
        seen[ident] = p
    return [pathlib.Path(p) for p in paths]


def check_output(path, what: str) -> pathlib.Path:
    """Refuses, before the work that fills it, an output that cannot be written whole: a folder, a device, a
    FIFO or a link where the file goes, or a folder that does not take a file (tried: a temporary is created
    and removed). Missing folders are allowed when their nearest existing one is writable."""
    path = pathlib.Path(path)
    if path.name in ("", ".", ".."):
        raise InputError(f"{path}: expected {what} (a file name), found a folder")
    if path.is_symlink():
        raise InputError(f"{path}: expected {what} (a new or regular file), found a symbolic link")
    if os.path.lexists(path) and kind(path) != "a regular file":
        raise InputError(f"{path}: expected {what} (a new or regular file), found {kind(path)}")
    folder = path.absolute().parent
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{path}: expected {what} inside a folder, found {kind(existing)} at {existing}")
    if existing != folder:
        if not os.access(existing, os.W_OK | os.X_OK):
            raise InputError(f"{path}: expected {what} in a writable folder, found {existing} not writable")
        return path
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"{path}: expected {what} in a folder a file can be written in, found {folder}: "
                         f"{e.strerror.lower()}") from None
    return path


def write_text(path, text: str) -> None:
    """`text` into `path` whole: a temporary in the same folder, flushed, then renamed over it. Only a new file or
    a regular file is replaced (the rename would put a file where a device, FIFO, folder or link was)."""
    path = pathlib.Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise InputError(f"{path}: expected a new file or a regular file to replace, found "
                         f"{'a symbolic link' if path.is_symlink() else 'something that is not a regular file'}; "
                         f"nothing was written")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{path}: expected to write it, found {e.strerror.lower()}") from None


class StdoutError(Exception):
    """stdout refused a write (a full disk or device, a closed pipe)."""


class _CheckedStdout:
    """stdout as main_guard hands it to a tool: a write or flush it refuses raises StdoutError, whatever the
    tool was doing (an OSError of its own files stays an OSError)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as e:
            raise StdoutError(e.strerror or str(e)) from None

    def flush(self):
        try:
            self._stream.flush()
        except OSError as e:
            raise StdoutError(e.strerror or str(e)) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def script_module(path):
    """A Python script without the .py suffix (scripts/fit-testbed) as a module, for another tool or a test that
    calls its functions; the module is named after the file ('-' as '_')."""
    import importlib.machinery
    import importlib.util
    path = pathlib.Path(path)
    name = path.name.replace("-", "_")
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(mod)
    return mod


def main_guard(tool: str, main, argv=None) -> int:
    """Runs main(argv) as a tool: an InputError is one line on stderr and exit 2, SIGTERM and SIGINT end it at
    once (exit 143 and 130), and output that stdout did not take (a full disk, a closed stdout or pipe) is
    said and exits 2."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if sys.stdout is None:  # Python's stdout when the tool started with it closed
        print(f"{tool}: error: could not write the output to stdout: stdout was closed", file=sys.stderr)
        return 2
    sys.stdout = _CheckedStdout(sys.stdout)
    try:
        code = main(argv) if argv is not None else main()
        sys.stdout.flush()
    except InputError as e:
        print(f"{tool}: error: {e}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    except StdoutError as e:
        print(f"{tool}: error: could not write the output to stdout: {str(e).lower()}", file=sys.stderr)
        # What is still buffered goes nowhere, so the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        code = 2
    finally:
        if isinstance(sys.stdout, _CheckedStdout):
            sys.stdout = sys.stdout._stream
    return code
