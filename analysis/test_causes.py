# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""analysis/causes.toml: a cause with evidence for every claim the reference does not reproduce."""

import pathlib
import sys

import pytest
import causes
import common
import report

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def test_every_claim_not_reproduced_in_the_reference_has_a_cause_with_evidence():
    known = causes.load()  # every evidence file and anchor exists, every kind is known
    assert causes.check(report.REFERENCE, known) == []
    assert all(c["text"].strip() for c in known.values())


ENTRY = """[[cause]]
paper = "P"
figure = "F"
kind = {kind}
text = "t"
evidence = {evidence}
"""


@pytest.mark.parametrize("kind, evidence, message", [
    ('"guess"', '["docs/REPRODUCING.md"]', "key 'kind': expected one of testbed,"),
    ('"workload"', '["docs/NOPE.md"]', "key 'evidence': expected a file of the repository, found no such file at "
                                       "'docs/NOPE.md'"),
    # Once accepted: evidence outside the repository, and a traceback on a number.
    ('"workload"', '["/etc/passwd"]', "expected a path inside the repository, relative to its root, found "
                                      "'/etc/passwd'"),
    ('"workload"', '["../../../etc/hostname"]', "expected a path inside the repository"),
    ('"workload"', '["docs"]', "expected a file of the repository, found a directory at 'docs'"),
    ('"workload"', '[1]', "key 'evidence': expected paths of files of the repository as strings, found 1"),
    ('"workload"', '["docs/REPRODUCING.md#no-such-heading"]', "expected a heading of docs/REPRODUCING.md with anchor"),
    ('"workload"', '[]', "key 'evidence': expected at least one file, found none"),
])
def test_a_malformed_entry_is_refused_by_file_entry_and_key(tmp_path, kind, evidence, message):
    f = tmp_path / "causes.toml"
    f.write_text(ENTRY.format(kind=kind, evidence=evidence))
    with pytest.raises(ValueError) as e:
        causes.load(f)
    assert str(f) in str(e.value) and "[[cause]] 1 (P, F)" in str(e.value) and message in str(e.value)


def test_a_cause_written_as_a_table_is_refused_not_a_traceback(tmp_path):
    f = tmp_path / "causes.toml"
    f.write_text(ENTRY.format(kind='"open"', evidence="[]").replace("[[cause]]", "[cause]"))
    with pytest.raises(ValueError) as e:
        causes.load(f)
    assert "key 'cause': expected an array of tables ([[cause]] entries), found dict" in str(e.value)


def test_check_names_a_claim_without_a_cause_and_a_cause_without_a_claim(tmp_path):
    ref = tmp_path / "verdicts.csv"
    ref.write_text("paper,figure,judged in,verdict,other comparison,headline,recorded\n"
                   "A,Fig. 1,mechanism,not reproduced,-,h,x\nB,Fig. 2,mechanism,reproduced,-,h,x\n"
                   "C,Table 8,n/a,construction,-,h,x\n")
    f = tmp_path / "causes.toml"
    f.write_text(ENTRY.format(kind='"open"', evidence="[]").replace('"P"', '"B"').replace('"F"', '"Fig. 2"')
                 + ENTRY.format(kind='"open"', evidence="[]").replace('"P"', '"Z"'))
    problems = causes.check(ref, causes.load(f))
    assert any("A Fig. 1 is 'not reproduced' and has no entry" in p for p in problems)
    assert any("B Fig. 2 has a cause but is 'reproduced'" in p for p in problems)
    assert any("Z F is not a claim of" in p for p in problems)
    assert not any("Table 8" in p for p in problems)  # a construction check needs no cause


def test_a_quoted_number_must_be_in_the_text_and_among_the_references_numbers(tmp_path):
    """HybriMoE Fig. 9's cause quoted "-0.002 and -0.053 on today's" after the reference had moved to +0.015 and
    -0.033: a cause's quotes are checked against the reference's recorded numbers for its claim."""
    ref = tmp_path / "verdicts.csv"
    ref.write_text("paper,figure,judged in,verdict,other comparison,headline,recorded\n"
                   'P,F,mechanism,not reproduced,-,"MRS - LRU: deepseek +0.015, qwen2 -0.033",x\n')
    entry = ENTRY.format(kind='"workload"', evidence='["docs/REPRODUCING.md"]')
    f = tmp_path / "causes.toml"
    f.write_text(entry.replace('text = "t"', 'text = "today +0.015 and -0.053"\nquotes = ["+0.015", "-0.053"]'))
    problems = causes.check(ref, causes.load(f))
    assert any("key 'quotes': expected '-0.053' among the reference's numbers" in p for p in problems), problems
    assert not any("'+0.015'" in p for p in problems)
    f.write_text(entry.replace('text = "t"', 'text = "today +0.015"\nquotes = ["-0.033"]'))
    with pytest.raises(ValueError, match="key 'quotes': expected '-0.033' in the text"):
        causes.load(f)


def test_the_report_shows_the_cause_beside_a_verdict_that_needs_one():
    known = causes.load()
    e = {"status": "ok", "paper": "DALI", "figure": "Table 4", "summary": {"verdict": common.NOT_REPRODUCED}}
    assert report.cause_cell(e, known).startswith("*testbed*: Depends on the link")
    assert report.cause_cell(dict(e, summary={"verdict": common.REPRODUCED}), known) == ""
    assert report.cause_cell(dict(e, figure="Fig. 99"), known) == "none recorded in analysis/causes.toml"


RUN = "docs/measurements/planning-screen-2026-12-07/run.sh"


@pytest.mark.parametrize("extra, message", [
    ('runs = ["docs/nope/run.sh"]', "key 'runs': expected a script of the repository, found no file at "
                                    "'docs/nope/run.sh'"),
    ('runs = ["docs/REPRODUCING.md"]', "key 'runs': expected an executable script, found 'docs/REPRODUCING.md'"),
    (None, None),  # a script of the repository without a log beside it (chosen below)
    ('run_quotes = ["0.88x"]', "key 'runs': expected the runs whose logs hold the run_quotes, found none"),
    (f'runs = ["{RUN}"]\nrun_quotes = ["9.99x"]', "key 'run_quotes': expected '9.99x' in the log of"),
])
def test_a_cause_names_a_committed_run_and_quotes_its_log(tmp_path, extra, message):
    """A counterfactual a cause rests on is a committed run: its script exists and is executable, its log is beside
    it, and each number the text takes from it is in that log (the text here quotes 0.88x and 9.99x)."""
    if message is None:
        script = next(p for p in sorted(pathlib.Path(common.repo_root()).glob("scripts/*"))
                      if p.is_file() and not (p.parent / "log.txt").exists() and p.stat().st_mode & 0o111)
        extra = f'runs = ["{script.relative_to(common.repo_root())}"]\nrun_quotes = ["0.88x"]'
        message = "expected the log the run wrote beside it"
    f = tmp_path / "causes.toml"
    f.write_text(ENTRY.format(kind='"workload"', evidence='["docs/REPRODUCING.md"]').replace(
        'text = "t"', 'text = "0.88x and 9.99x"') + extra + "\n")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        causes.load(f)
    f.write_text(ENTRY.format(kind='"workload"', evidence='["docs/REPRODUCING.md"]').replace(
        'text = "t"', 'text = "0.88x and 9.99x"') + f'runs = ["{RUN}"]\nrun_quotes = ["0.88x"]\n')
    assert causes.load(f)[("P", "F")]["run_quotes"] == ["0.88x"]
