#!/usr/bin/env python3
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""The measurable sentences of docs/STATUS.md's structure row, computed from the tree.

Every source file the repository tracks (C++ and CUDA, Python, shell; the lab notes under docs/measurements are
history and are left out) is read, and four facts are computed:

- functions: every function's length in lines, from the first line of its signature to its closing brace
  (C++/CUDA: a brace-matching reader over the code with comments, strings and preprocessor lines blanked, a
  lambda or local class counted in the function around it; Python: the ast, decorators aside; shell: a
  `name() {` line to the first `}` at its indentation). The longest, and how many exceed LIMIT lines.
- files over BIG lines, with their lengths.
- citations of this tracker's issue numbers (the word issue, then a number, "#" allowed between) in code,
  comments and docs; another project's issue, named as such (its name or "its" before the word), is not one.
- code lines per language (blank lines included).

    python3 ci/status_facts.py            # print the facts
    python3 ci/status_facts.py --check    # exit 1 when docs/STATUS.md's generated block differs from them
    python3 ci/status_facts.py --write    # rewrite that block

The block sits between BEGIN and END in docs/STATUS.md; the test beside this file (ci/test_status_facts.py, in
make test) runs --check, so the page cannot say what the tree does not.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
STATUS = ROOT / "docs" / "STATUS.md"
BEGIN = "<!-- begin: ci/status_facts.py -->"
END = "<!-- end: ci/status_facts.py -->"
LIMIT = 150  # the longest a function may be (CONVENTIONS: about 120 lines a reader can hold; 150 the hard line)
BIG = 800  # a file this long is worth a second look
SKIP = ("docs/measurements/",)
LANGUAGES = {"cpp": "C++ and CUDA", "python": "Python", "shell": "shell"}
CPP = (".cc", ".h", ".cu", ".cuh", ".cpp", ".hpp")
# Not inside a path (a-issue43/); a C++ comment may break the line between the word and the number.
CITATION = re.compile(r"(?<![-/\w])issues?\s*(?://\s*)?#?\s*(\d+)\b", re.IGNORECASE)
# "llama.cpp's issue 27501", "its issue 1232", "KTransformers issue 1232": another project's tracker.
OTHER_PROJECT = re.compile(r"(['’]s|\bits|\btheir|llama\.cpp|ktransformers|ollama|vllm|pytorch)\s+$", re.IGNORECASE)


class Function:
    def __init__(self, path: str, name: str, start: int, end: int):
        self.path, self.name, self.start, self.end = path, name, start, end

    @property
    def lines(self) -> int:
        return self.end - self.start + 1


def tracked_files() -> list:
    """Repository-relative paths of the tracked files (every file under ROOT outside build folders when git is
    not there)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True, capture_output=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        rels = (p.relative_to(ROOT) for p in ROOT.rglob("*") if p.is_file())
        names = [str(r) for r in rels if not r.parts[0].startswith(("build", ".git", "results"))]
    return sorted(n for n in names if not n.startswith(SKIP) and (ROOT / n).is_file())


def language(path: str, head: str) -> str:
    if path.endswith(CPP):
        return "cpp"
    if path.endswith(".py"):
        return "python"
    if path.endswith(".sh") or path.endswith(".sbatch"):
        return "shell"
    if "." not in pathlib.Path(path).name and head.startswith("#!"):
        first = head.splitlines()[0]
        if "python" in first:
            return "python"
        if "sh" in first:
            return "shell"
    if pathlib.Path(path).name == "Makefile":
        return "make"
    if path.endswith(".md"):
        return "doc"
    return ""


# ------------------------------------------------------------------------------------------- C++ and CUDA


def blank_cpp(text: str) -> str:
    """The code with comments, string and character literals and preprocessor lines replaced by spaces (newlines
    kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i)
            delim = ")" + text[i + 2:k] + '"'
            j = text.find(delim, k)
            j = n if j < 0 else j + len(delim)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")  # a digit separator (1'000)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


SCOPE = re.compile(r"^\s*(template\s*<.*>\s*)?(namespace|class|struct|union|extern)\b", re.DOTALL)
ACCESS = re.compile(r"(\s*(public|private|protected)\s*:(?!:))+")
NOT_FUNCTION = re.compile(r"^\s*(enum|typedef|using|return)\b|=\s*$|\b(if|for|while|switch|catch)\s*\(", re.DOTALL)
NAME = re.compile(r"((?:[A-Za-z_]\w*(?:<[^()]*>)?::)*(?:operator\s*[^\s(]+|~?[A-Za-z_]\w*))\s*$")


def function_name(head: str) -> str:
    """The qualified name before the parameter list of a function's head (TEST(A, B) for a test)."""
    depth, i = 0, 0
    for i, ch in enumerate(head):
        depth += ch == "<"
        depth -= ch == ">" and depth > 0
        if ch == "(" and depth == 0:
            break
    m = NAME.search(head[:i])
    if not m:
        return "?"
    name = m.group(1)
    if name in ("TEST", "TEST_F", "TEST_P", "TYPED_TEST"):
        args = head[i + 1:head.find(")", i)]
        return name + "(" + re.sub(r"\s+", " ", args.strip()) + ")"
    return re.sub(r"\s+", "", name)


def cpp_functions(path: str, text: str) -> list:
    """Every function body at namespace or class level (a member defined in its class included)."""
    code = blank_cpp(text)
    line_of = [0] * (len(code) + 1)
    ln = 1
    for i, ch in enumerate(code):
        line_of[i] = ln
        if ch == "\n":
            ln += 1
    line_of[len(code)] = ln
    out = []
    stack = []  # kinds of the open braces: "scope" (look inside), "function", "other" (skip inside)
    head_start = 0  # where the text before the next brace at this level begins
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        inside = any(k != "scope" for k in stack)
        if c == ";" and not inside:
            head_start = i + 1
        elif c == "{":
            if inside:
                stack.append("other")
            else:
                access = ACCESS.match(code, head_start)
                if access:  # "public:" before a member: not part of its head
                    head_start = access.end()
                head = code[head_start:i]
                if SCOPE.match(head) and "(" not in head:
                    stack.append("scope")
                    head_start = i + 1
                elif "(" in head and not NOT_FUNCTION.search(head.strip() and head):
                    stack.append(("function", head_start, i))
                else:
                    stack.append("other")
        elif c == "}" and stack:
            top = stack.pop()
            if isinstance(top, tuple) and not any(k != "scope" for k in stack):
                _, hs, body = top
                rest = code[i + 1:i + 200].lstrip()
                if rest[:1] in (",", "{"):  # a member initialised with braces: the constructor's body is ahead
                    pass
                else:
                    first = hs + (len(code[hs:body]) - len(code[hs:body].lstrip()))
                    name = function_name(code[first:body])
                    out.append(Function(path, name, line_of[first], line_of[i]))
                    head_start = i + 1
            elif not any(k != "scope" for k in stack) and top == "scope":
                head_start = i + 1
            # An "other" block at this level (a default argument's {}, an initialiser) ends no head: the next ";"
            # does.
        i += 1
    return out


# ------------------------------------------------------------------------------------------- Python and shell


def python_functions(path: str, text: str) -> list:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise SystemExit(f"{path}:{e.lineno}: expected Python that parses, found {e.msg}")
    return [Function(path, node.name, node.lineno, node.end_lineno) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


SHELL_FUNCTION = re.compile(r"^(\s*)(function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$")


def shell_functions(path: str, text: str) -> list:
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = SHELL_FUNCTION.match(line)
        if not m:
            continue
        indent = m.group(1)
        for j in range(i + 1, len(lines)):
            if re.match(rf"^{re.escape(indent)}\}}", lines[j]):
                out.append(Function(path, m.group(3), i + 1, j + 1))
                break
    return out


def import_cycles(modules: dict) -> list:
    """Cycles among Python modules that import each other by name from one folder ({folder/name: source}): each a
    sorted list of the modules in one strongly connected group of two or more (an import inside a function
    counts: it only moves the cycle to run time)."""
    graph = {}
    for key, text in modules.items():
        folder = key.rsplit("/", 1)[0]
        names = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        graph[key] = sorted(f"{folder}/{n}" for n in names if f"{folder}/{n}" in modules and f"{folder}/{n}" != key)
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


# ------------------------------------------------------------------------------------------- the facts


def citations(path: str, text: str) -> list:
    out = []
    for m in CITATION.finditer(text):
        before = text[max(0, m.start() - 40):m.start()]
        if OTHER_PROJECT.search(before):
            continue
        out.append(f"{path}:{text.count(chr(10), 0, m.start()) + 1}")
    return out


def facts() -> dict:
    functions, big, cited, code, modules = [], [], [], {}, {}
    for path in tracked_files():
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # a binary file
        cited += citations(path, text)  # every text file: code, comments, docs, presets, fuzz seeds
        lang = language(path, text[:200])
        if lang not in ("cpp", "python", "shell"):
            continue
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        code[lang] = code.get(lang, 0) + n
        if n > BIG:
            big.append((path, n))
        functions += {"cpp": cpp_functions, "python": python_functions, "shell": shell_functions}[lang](path, text)
        if path.endswith(".py"):
            modules[path[:-3]] = text
    functions.sort(key=lambda f: (-f.lines, f.path, f.start))
    readme = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    return {"readme": readme, "cycles": import_cycles(modules), "functions": functions, "over": [f for f in functions if f.lines > LIMIT],
            "big": sorted(big, key=lambda x: -x[1]), "citations": cited, "code": code}


def sentence(f: dict) -> str:
    """The structure row's measured part, as docs/STATUS.md says it."""
    top = f["functions"][0]
    over = f["over"]
    parts = [f"about {round(len(f['functions']), -2):,} functions over C++, CUDA, Python and shell (every tracked "
             f"source file but the lab notes); the longest {top.lines} lines (`{top.name}`, {top.path}:{top.start})"]
    if over:
        parts.append(f"{len(over)} over {LIMIT} lines: " + ", ".join(f"`{x.name}` {x.lines} ({x.path})" for x in over))
    else:
        parts.append(f"none over {LIMIT} lines")
    parts.append(f"{len(f['big'])} files over {BIG} lines"
                 + (": " + ", ".join(f"{p} {n}" for p, n in f["big"]) if f["big"] else ""))
    parts.append(f"{len(f['cycles'])} import cycles among the Python modules"
                 + (": " + ", ".join(" <-> ".join(c) for c in f["cycles"]) if f["cycles"] else ""))
    parts.append(f"{len(f['citations'])} citations of this tracker's issue numbers"
                 + (": " + ", ".join(f["citations"]) if f["citations"] else ""))
    # Rounded to the thousand: the page moves when the tree grows or shrinks by that, not with every edit.
    kilo = lambda n: f"{round(n / 1000):,}k"
    total = sum(f["code"].values())
    parts.append(f"about {kilo(total)} lines of code ("
                 + ", ".join(f"{LANGUAGES[k]} {kilo(v)}" for k, v in sorted(f["code"].items(), key=lambda kv: -kv[1]))
                 + f"); the README {f['readme']} lines")
    return "; ".join(parts)


def block(f: dict) -> str:
    return f"{BEGIN}{sentence(f)}{END}"


def page_block(text: str):
    a, b = text.find(BEGIN), text.find(END)
    return None if a < 0 or b < a else text[a:b + len(END)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/STATUS.md's block differs")
    ap.add_argument("--write", action="store_true", help="rewrite docs/STATUS.md's block")
    ap.add_argument("--top", type=int, default=10, help="functions to print (default 10)")
    args = ap.parse_args(argv)
    f = facts()
    want = block(f)
    if args.check or args.write:
        text = STATUS.read_text(encoding="utf-8")
        have = page_block(text)
        if have is None:
            print(f"{STATUS}: expected a block between '{BEGIN}' and '{END}', found none", file=sys.stderr)
            return 1
        if args.write:
            STATUS.write_text(text.replace(have, want), encoding="utf-8")
            print(f"wrote {STATUS}")
            return 0
        if have != want:
            print(f"{STATUS}: line {text.count(chr(10), 0, text.find(BEGIN)) + 1}: expected the tree's facts\n  "
                  f"{sentence(f)}\nfound\n  {have[len(BEGIN):-len(END)]}\n(python3 ci/status_facts.py --write "
                  "rewrites it)", file=sys.stderr)
            return 1
        print(f"{STATUS}: its structure facts are the tree's")
        return 0
    for x in f["functions"][:args.top]:
        print(f"{x.lines:5d}  {x.name}  {x.path}:{x.start}")
    print(sentence(f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
