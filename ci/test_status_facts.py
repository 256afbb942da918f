# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""docs/STATUS.md's structure facts are the tree's (ci/status_facts.py), and the readers it computes them with
find what they should on small known inputs."""

import status_facts as sf


def test_the_status_page_says_what_the_tree_is(capsys):
    assert sf.main(["--check"]) == 0, capsys.readouterr().err


CPP = """\
#include <map>  // a { in a comment and "}" in a string do not count
#define BODY(x) { return x; }
namespace a {
class K : public B {
 public:
  K(int x) : x_{x}, y_(x) {
    z_ = 1;
  }
  int get(int i = {}) const override {
    auto f = [&](int j) {
      return j + 1;
    };
    return f(i);
  }
 private:
  int x_, y_, z_;
};
enum class E { kA, kB };
static const int kTable[] = {1, 2, 3};
int K::twice(const std::map<int, int>& m,
             int n) {
  const char* s = "}{";
  return 2 * n;
}
}  // namespace a
TEST(Suite, Name) {
  EXPECT_EQ(1, 1);
}
"""


def test_the_cpp_reader_finds_each_function_with_its_signature_and_body():
    got = [(f.name, f.start, f.end) for f in sf.cpp_functions("x.cc", CPP)]
    assert got == [("K", 6, 8), ("get", 9, 14), ("K::twice", 20, 24), ("TEST(Suite, Name)", 26, 28)]


def test_the_python_and_shell_readers():
    py = "def a():\n    def b():\n        pass\n    return b\n\n\n@dec\ndef c(x):\n    return x\n"
    assert [(f.name, f.start, f.end) for f in sf.python_functions("x.py", py)] == [("a", 1, 4), ("c", 8, 9), ("b", 2, 3)]
    sh = "#!/bin/bash\nusage() {\n  echo hi\n  if x; then { y; }; fi\n}\nmain\n"
    assert [(f.name, f.start, f.end) for f in sf.shell_functions("x.sh", sh)] == [("usage", 2, 5)]


def test_a_citation_of_this_trackers_issue_is_found_and_another_projects_is_not():
    issue = "iss" + "ue"  # so that this file cites nothing itself
    text = (f"# {issue} 39: a degenerate model\nllama.cpp's {issue} 27501 asks for it; its {issue} 1232 too\n"
            f"see measurements/zen4-validation-{issue}43/ (a path)\nIssue #7 again\n"
            f"// a checker ({issue}\n// 44's): the number on the next comment line\n")
    assert sf.citations("f.toml", text) == ["f.toml:1", "f.toml:4", "f.toml:5"]


def test_the_sentence_names_every_function_over_the_limit():
    f = {"functions": [sf.Function("a.cc", "big", 1, 200), sf.Function("b.py", "small", 1, 10)], "big": [("a.cc", 900)],
         "citations": [], "code": {"cpp": 1900, "python": 10}, "readme": 150, "cycles": [["a/x", "a/y"]]}
    f["over"] = [x for x in f["functions"] if x.lines > sf.LIMIT]
    s = sf.sentence(f)
    assert "the longest 200 lines (`big`, a.cc:1)" in s and "1 over 150 lines: `big` 200 (a.cc)" in s
    assert "1 files over 800 lines: a.cc 900" in s and "0 citations" in s and "1 import cycles among the Python " \
        "modules: a/x <-> a/y" in s
    assert "about 2k lines of code (C++ and CUDA 2k, Python 0k); the README 150 lines" in s


def test_an_import_cycle_is_found_even_through_a_local_import():
    mods = {"a/x": "import y\nimport os\n", "a/y": "def f():\n    import x\n", "a/z": "import x\n",
            "b/x": "import z\n"}
    assert sf.import_cycles(mods) == [["a/x", "a/y"]]


def test_the_readme_stays_a_front_door():
    """At most 200 lines: what the project is, the two commands, where to read on."""
    assert (sf.ROOT / "README.md").read_text(encoding="utf-8").count("\n") <= 200
