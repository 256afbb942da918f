# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
"""Regenerates every figure and table the harness has results for into
results/report/, with an index (Markdown and static HTML) stating per
figure whether the paper's trend is reproduced and the numeric differences.

    python3 analysis/report.py --results results --out results/report
(`make report` runs it). Each figure script reads only results/; a figure
whose suite has not been run is listed as "not run" with the command."""

from __future__ import annotations

import argparse
import html
import importlib
import pathlib
import sys
import traceback

import pandas as pd

import causes
import common
import regions
import testbeds

# Every figure script, as each declares itself (FIGURE = {...}; common.figure_scripts): a new script needs
# no entry here.
FIGURES = common.figure_scripts()

# The papers' figures and tables with no suite and script yet, and why.
PENDING = [
    ("KTransformers", "Table 2, Fig. 13 (accuracy of DS-3, DS-2, QW-2)",
     "need the real checkpoints and downstream benchmarks; Fig. 13's shape on small models trained here is "
     "in the machine section (tiny_accuracy); Fig. 3 and 7 are measured there too (kernels)"),
    ("DALI", "Fig. 6, 20, 21; Tables 5, 7", "need real downstream tasks (Tables 5, 7) and measured GPU memory; "
     "not yet built. Table 5's residual-vs-gate-reuse comparison must come from recorded traces: the synthetic "
     "generator's layer drift is calibrated on DALI Table 8, so it would build the residual's advantage in"),
    ("ProMoE", "GoodPred and stride prefetch (arXiv 2410.22134)",
     "only the abstract was reachable: the predictor, the chunk size and GoodPred's definition are unknown here "
     "(docs/STRATEGIES.md, 'Not done')"),
    ("MoE-Lightning", "the headline in the paper's own settings; the HRM policy search's gain (arXiv 2411.11217)",
     "the paper's batch sizes, prompt and generation lengths and FlexGen's settings were not reachable, nor "
     "the batch size and KV split (N, r_c) in the search; the headline is judged in the harness's settings "
     "against its FlexGen and FlexGen(c) on a T4 "
     "(peers_moe_lightning_t4), CGOPipe itself against the whole batch (peers_moe_lightning), and the roofline "
     "search (moe-lightning-hrm, the MILP's form not reachable) is shown there, not judged on its own "
     "(docs/STRATEGIES.md)"),
]


# The verdicts a change is judged against (make report-accept writes them).
REFERENCE = causes.REFERENCE


def run_all(results: str, out: pathlib.Path):
    """Every figure script in both comparisons (common.COMPARISONS): as published, each system on its own stack
    and kernels with the testbed's evidence, writes to `out` and gives the verdict; the mechanism comparison, a
    what-if (every strategy on one implementation), writes to out/mechanism/ and is shown beside it
    (docs/REPRODUCING.md, "Which comparison judges"). A script that reads no suite rows (predictor and
    characterisation files) has no comparison and runs once."""
    entries = []
    for module, paper, fig, suite in FIGURES:
        e = {"module": module, "paper": paper, "figure": fig, "suite": suite, "status": "not run", "summary": None,
             "judged_in": common.AS_PUBLISHED, "other": None, "other_comparison": common.MECHANISM}
        try:
            mod = importlib.import_module(module)
            common.set_comparison(common.AS_PUBLISHED)
            common.reset_lookups()
            s = mod.run(results, out)
            if s is not None:
                e["status"] = "ok"
                e["summary"] = s
            if common.reset_lookups() == 0:
                e["judged_in"], e["other_comparison"] = "n/a", None  # no suite rows: no comparison
            else:
                common.set_comparison(common.MECHANISM)
                e["other"] = mod.run(results, out / common.MECHANISM)
        except ModuleNotFoundError as ex:
            if ex.name == module:
                e["status"] = "no script"
            else:
                raise
        except Exception as ex:  # a broken result must not hide the others
            e["status"] = "error"
            e["error"] = f"{type(ex).__name__}: {ex}"
            traceback.print_exc()
        finally:
            common.set_comparison(common.AS_PUBLISHED)
        entries.append(e)
    return entries


def other_text(e) -> str:
    """The other comparison's verdict, for the index."""
    if not e.get("other_comparison"):
        return "n/a (no comparison)"
    return f"{e['other_comparison']}: " + (common.verdict_of(e["other"]) if e.get("other") else "not run")


def cause_cell(e, known: dict) -> str:
    """The cause beside a verdict that is not "reproduced" (analysis/causes.toml; docs/REPRODUCING.md, "Why a
    claim is not reproduced"); empty for the others."""
    if e["status"] != "ok" or common.verdict_of(e["summary"]) not in causes.NEEDS_CAUSE:
        return ""
    c = known.get((e["paper"], e["figure"]))
    return causes.text(c) if c else "none recorded in analysis/causes.toml"


def verdict_counts(entries) -> dict:
    """How many figures have each verdict (figures with results only), in the comparison each is judged in."""
    out = {}
    for e in entries:
        if e["status"] == "ok":
            v = common.verdict_of(e["summary"])
            v = "no margin" if v.startswith("no margin") else v
            out[v] = out.get(v, 0) + 1
    return out


def headline(entries) -> str:
    c = verdict_counts(entries)
    n = sum(v for k, v in c.items() if k not in (common.CONSTRUCTION, common.HOST_TIME, common.NO_CLAIM))
    s = (f"{n} figures and tables from results, each judged as published: "
         f"{c.get(common.REPRODUCED, 0)} reproduced (direction and magnitude), "
         f"{c.get(common.DIRECTION_ONLY, 0)} direction only (the paper's number missed, or none reachable to "
         "compare with), "
         f"{c.get(common.NOT_REPRODUCED, 0)} not reproduced, {c.get(common.INCONCLUSIVE, 0)} inconclusive")
    if c.get(common.CONSTRUCTION, 0):
        s += f"; {c[common.CONSTRUCTION]} more true by construction (reported, not counted)"
    if c.get(common.HOST_TIME, 0):
        s += (f"; {c[common.HOST_TIME]} of this machine's host time only (reported, not counted: it says nothing "
              "about the paper's testbed)")
    if c.get(common.NO_CLAIM, 0):
        s += f"; {c[common.NO_CLAIM]} comparison page(s) without a claim (shown, not counted)"
    if c.get("no margin", 0):
        s += (f", {c['no margin']} not yet rated with margins (their scripts still compare without a tolerance "
              "on one seed; not counted as reproduced)")
    return s + "."


VERDICT_RULE = (f"Each claim has two outcomes. Its *direction* holds when its effect exceeds the stated tolerance "
                f"({100 * common.REL_TOL:.0f}% for times and speeds, {common.ABS_TOL:.2f} for fractions such as hit "
                f"rates) in every one of at least {common.MIN_SEEDS} workload seeds, fails when the opposite holds "
                "in every seed, and is inconclusive otherwise; its *magnitude* matches when the harness's effect is "
                f"within +-{100 * common.RATIO_BAND:.0f}% of the paper's number in every seed, where the paper "
                "publishes one. A claim is *reproduced* when its direction holds and its magnitude matches, *direction "
                "only* when the direction holds and the magnitude misses or no number of the paper's was reachable "
                "to compare with (a check that is itself a magnitude, such as a published range, needs nothing "
                "more). A "
                "figure is not reproduced if any claim is not, inconclusive if any is, direction only if any is. "
                "Checks true by construction (a calibration target, the cost model's own assumption) are listed "
                "and not counted. Each figure is judged in the comparison its paper's claim is about: "
                "*mechanism* (every strategy on one implementation: ablations and policy comparisons) or *as "
                "published* (each system on its own implementation, a fitted cost only for the system it was "
                "measured on: system comparisons and absolute numbers); the other comparison's verdict is shown "
                "beside it. As published, a system whose paper gives no cost of its own implementation carries only "
                "the profile's assumptions, while a baseline carries what was fitted on its measured time "
                "(HybriMoE against kTransformers on HybriMoE's testbed, DALI and its baselines against HybriMoE on "
                "DALI's): speedups over such a baseline are upper bounds there, and the mechanism comparison beside "
                "them says what the decisions alone give (docs/COST_MODEL.md).")


def index_markdown(entries, results: str, reference: pathlib.Path = REFERENCE, out=None) -> str:
    s = ("# moebench report\n\nEvery figure and table the harness reproduces, from the latest complete runs in "
         f"`{results}/`. Paper values are the papers' (analysis/paper_values/); harness values are simulated. "
         "The verdict is each script's stated checks, not a judgement of closeness; the tables give the "
         "numbers and their ratios.\n\n" + VERDICT_RULE + "\n\n**" + headline(entries) + "**\n\n")
    known = causes.load()
    s += ("| paper | figure / table | judged in | verdict | other comparison | numbers (harness vs paper) | suite | "
          "cause (not reproduced) |\n|---|---|---|---|---|---|---|---|\n")
    for e in entries:
        if e["status"] == "ok":
            sm = e["summary"]
            s += (f"| {e['paper']} | [{e['figure']}]({sm['markdown']}) | {e['judged_in']} | {common.verdict_of(sm)} | "
                  f"{other_text(e)} | {sm.get('headline', '')} | {e['suite']} | "
                  f"{cause_cell(e, known).replace(chr(10), ' ')} |\n")
        elif e["status"] == "not run":
            how = e["suite"] if e["suite"].startswith("make ") else f"build/bin/run_suite {e['suite'].split(' ')[0]}"
            s += f"| {e['paper']} | {e['figure']} | {e['judged_in']} | not run | - | - | run `{how}` | - |\n"
        else:
            s += (f"| {e['paper']} | {e['figure']} | {e['judged_in']} | {e['status']} | - | "
                  f"{html.escape(e.get('error', ''))[:100]} | {e['suite']} | - |\n")
    s += "\n## Pending\n\n| paper | figure / table | why |\n|---|---|---|\n"
    for paper, fig, why in PENDING:
        s += f"| {paper} | {fig} | {why} |\n"
    s += before_after_markdown(entries, reference)
    s += machine_markdown()
    tb = _TESTBEDS.get("markdown", "")
    if tb:
        s += "\n## Testbeds: the baselines' absolute times and breakdowns\n\n" + tb + "\n"
    s += ("\n## Across the testbed regions\n\nEach claim judged at the profiles its testbed's baseline evidence "
          "allows (docs/REPRODUCING.md, \"Across the testbed region\").\n\n" + regions.markdown(results, out))
    s += "\n## Details\n\n"
    for e in entries:
        if e["status"] == "ok":
            md = (pathlib.Path(e["summary"]["markdown"]))
            s += f"- [{e['paper']} {e['figure']}]({md})\n"
    return s


# Measurements of this machine rather than paper figures: (module, section
# title, how to produce the results). Their summaries once run; an entry
# without results says how to get them.
MACHINE = [
    ("validation", "Simulator validation (real backend, CPU-only)",
     "`make validation` (calibrates this machine, runs `suites/validation.toml`; `ROUNDS=3` or more pools rounds)"),
    ("validation_tasks", "Simulator validation, task by task (where the error comes from)",
     "`make validation` (its runs keep a timeline of every case)"),
    ("kernels", "CPU expert kernels (KTransformers Fig. 3 and 7 on this CPU)", "`make bench-kernels`"),
    ("gpu_replay", "GPU replay: the hybrid strategies run for real on a lent GPU machine",
     "`scripts/gpu-session.sh` on a GPU machine (docs/GPU.md)"),
    ("tiny_accuracy", "Expert Deferral vs skipping on small trained models (KTransformers Fig. 13 shape)",
     "`make tiny-models tiny-traces` (trains two small MoE models here, about 15 minutes each)"),
    ("tiny_routing", "Real (recorded) vs synthetic routing, small trained models",
     "`make tiny-models tiny-traces tiny-routing` (trains two small MoE models here, about 15 minutes each)"),
]
_MACHINE = {}


def run_machine(results: str, out: pathlib.Path):
    for module, _, _ in MACHINE:
        try:
            _MACHINE[module] = importlib.import_module(module).run(results, out)
        except Exception:  # a broken measurement must not hide the figures
            traceback.print_exc()
            _MACHINE[module] = None


def machine_markdown() -> str:
    s = ""
    for module, title, how in MACHINE:
        if module not in _MACHINE:
            continue
        v = _MACHINE[module]
        s += f"\n## {title}\n\n"
        s += f"[{v['verdict']}]({v['markdown']}): {v['headline']}.\n" if v else f"not run: run {how}.\n"
    return s


# The testbed check (analysis/testbeds.py): its Markdown table and notes, once run.
_TESTBEDS = {}


def run_testbeds(results: str, out: pathlib.Path):
    try:
        s = testbeds.run(results, out)
    except Exception:  # a broken check must not hide the figures
        traceback.print_exc()
        s = None
    if s is not None:
        _TESTBEDS["markdown"] = (out / s["markdown"]).read_text().split("\n\n", 1)[1]
        _TESTBEDS["headline"] = s["headline"]




def verdict_rows(entries) -> pd.DataFrame:
    return pd.DataFrame([{"paper": e["paper"], "figure": e["figure"], "judged in": e.get("judged_in", ""),
                          "verdict": common.verdict_of(e["summary"]) if e["status"] == "ok" else e["status"],
                          "other comparison": other_text(e) if e["status"] == "ok" else "",
                          "headline": e["summary"].get("headline", "") if e["status"] == "ok" else ""}
                         for e in entries])


# What results depend on: a change to any of these after a run was made makes its verdicts stale.
RESULT_DEPENDENCIES = ("core", "baselines", "predictors", "workloads", "kernels", "tools", "configs", "suites",
                       "CMakeLists.txt", "cmake")


def stale_results(entries, root: pathlib.Path = REFERENCE.parents[2]) -> list:
    """Why each figure's results are older than the code and presets they depend on (the reference was
    once re-recorded from runs made before two presets were refitted). A suite run must come from a clean tree
    at a commit after which none of RESULT_DEPENDENCIES changed, with none of them uncommitted now; a results
    file without a manifest (make predictors, make characterize) must be newer than the last commit that
    changed them."""
    import subprocess

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)

    uncommitted = git("status", "--porcelain", "--", *RESULT_DEPENDENCIES).stdout.strip()
    last = git("log", "-1", "--format=%ct", "--", *RESULT_DEPENDENCIES).stdout.strip()
    last_change = float(last) if last else 0.0
    out = []
    if uncommitted:
        out.append("the tree has uncommitted changes in what results depend on ("
                   + ", ".join(sorted({ln[3:].split("/")[0] for ln in uncommitted.splitlines()})) + "): commit, rerun")
    for e in entries:
        if e["status"] != "ok":
            continue
        for part in str(e["summary"].get("run", "")).split(";"):
            p = pathlib.Path(part.strip().split(" (")[0])
            if not part.strip():
                continue
            man = p / "manifest.json"
            if man.is_file():
                import json
                prov = json.loads(man.read_text()).get("provenance", {})
                commit, dirty = prov.get("git_commit", ""), prov.get("git_dirty", True)
                if dirty:
                    out.append(f"{e['paper']} {e['figure']}: {p} was run from an uncommitted tree")
                elif not commit or git("cat-file", "-e", commit).returncode != 0:
                    out.append(f"{e['paper']} {e['figure']}: {p} names commit '{commit}', unknown here")
                elif git("diff", "--quiet", commit, "HEAD", "--", *RESULT_DEPENDENCIES).returncode != 0:
                    out.append(f"{e['paper']} {e['figure']}: {p} was run at {commit[:10]}; code or presets changed since")
            elif p.exists():
                newest = max((f.stat().st_mtime for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()),
                             default=0.0)
                if newest < last_change:
                    out.append(f"{e['paper']} {e['figure']}: {p} is older than the last change to what it depends on")
    return out


def accept_reference(entries, path: pathlib.Path) -> None:
    """Records the current verdicts as the reference, with the commit and date they came from."""
    import datetime
    import subprocess
    try:
        commit = subprocess.run(["git", "-C", str(path.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    t = verdict_rows(entries)
    t["recorded"] = f"{commit} {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}"
    path.parent.mkdir(parents=True, exist_ok=True)
    common.write_text_atomic(path, t.to_csv(index=False))
    # Every claim not reproduced needs a cause (analysis/test_causes.py fails until it has one).
    for problem in causes.check(path, causes.load()):
        print(f"report-accept: {problem} (add or remove it in analysis/causes.toml)", file=sys.stderr)


def change(before: str, now: str) -> str:
    """A figure whose suite was not run today is not a change: it was not compared."""
    if now == "not run":
        return "not run"
    if before == "absent":
        return "new"
    return "" if before == now else "changed"


def before_after(entries, path: pathlib.Path):
    """(table, recorded) of each figure's reference verdict and numbers beside today's, or (None, "")
    without a reference. The numbers are each figure's headline (harness vs paper values)."""
    if not path.is_file():
        return None, ""
    ref = pd.read_csv(path, keep_default_na=False)
    now = verdict_rows(entries)
    t = now.merge(ref[["paper", "figure", "verdict", "headline"]], on=["paper", "figure"], how="left",
                  suffixes=("", " before"))
    t["verdict before"] = t["verdict before"].fillna("absent")
    t["headline before"] = t["headline before"].fillna("")
    t = t.rename(columns={"verdict": "verdict now", "headline": "numbers now (harness vs paper)",
                          "headline before": "numbers before"})
    t["changed"] = [change(a, b) for a, b in zip(t["verdict before"], t["verdict now"])]
    recorded = str(ref["recorded"].iloc[0]) if "recorded" in ref and len(ref) else ""
    return t[["paper", "figure", "verdict before", "verdict now", "changed", "numbers before",
              "numbers now (harness vs paper)"]], recorded


def before_after_markdown(entries, path: pathlib.Path) -> str:
    t, recorded = before_after(entries, path)
    if t is None:
        return ""
    n = int((t["changed"] == "changed").sum())
    not_run = int((t["changed"] == "not run").sum())
    compared = len(t) - not_run
    return (f"\n## Verdicts before and after\n\nAgainst the reference verdicts recorded at {recorded} "
            f"(`{path.name}`, written by `make report-accept`): {n} of {compared} compared changed"
            + (f"; {not_run} not run today, so not compared" if not_run else "") + ".\n\n"
            + common.markdown_table(t) + "\n")


def index_html(entries, out: pathlib.Path, results: str, reference: pathlib.Path = REFERENCE) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>moebench report</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;"
             "font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}</style></head><body>",
             "<h1>moebench report</h1>",
             f"<p>From the latest complete runs in <code>{html.escape(results)}/</code>. Paper values are the "
             f"papers'; harness values are simulated.</p><p>{html.escape(VERDICT_RULE)}</p>"
             f"<p><b>{html.escape(headline(entries))}</b></p><table><tr><th>paper</th><th>figure / table</th>"
             "<th>judged in</th><th>verdict</th><th>other comparison</th><th>numbers (harness vs paper)</th>"
             "<th>status</th><th>cause (not reproduced)</th></tr>"]
    known = causes.load()
    for e in entries:
        tr = common.verdict_of(e["summary"]) if e["status"] == "ok" else "-"
        # Only a figure with results has a section to link to.
        fig = (f"<a href='#{e['module']}'>{html.escape(e['figure'])}</a>" if e["status"] == "ok"
               else html.escape(e["figure"]))
        parts.append(f"<tr><td>{e['paper']}</td><td>{fig}</td><td>{html.escape(str(e.get('judged_in', '')))}</td>"
                     f"<td>{html.escape(tr)}</td>"
                     f"<td>{html.escape(other_text(e) if e['status'] == 'ok' else '-')}</td>"
                     f"<td>{html.escape(e['summary'].get('headline', '') if e['status'] == 'ok' else '')}</td>"
                     f"<td>{e['status']}</td><td>{html.escape(cause_cell(e, known))}</td></tr>")
    parts.append("</table><h2>Pending</h2><table><tr><th>paper</th><th>figure / table</th><th>why</th></tr>")
    for paper, fig, why in PENDING:
        parts.append(f"<tr><td>{paper}</td><td>{html.escape(fig)}</td><td>{html.escape(why)}</td></tr>")
    parts.append("</table>")
    ba, recorded = before_after(entries, reference)
    if ba is not None:
        parts.append(f"<h2 id='before-after'>Verdicts before and after</h2><p>Against the reference verdicts "
                     f"recorded at {html.escape(recorded)} ({reference.name}, written by make report-accept).</p>")
        parts.append(ba.to_html(index=False, na_rep="-"))
    if _TESTBEDS.get("markdown"):
        tb = pd.read_csv(out / "testbeds.csv")
        parts.append("<h2 id='testbeds'>Testbeds: the baselines' absolute times and breakdowns</h2>")
        parts.append(tb.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"))
        notes = _TESTBEDS["markdown"].split("\n\n", 1)[-1]
        parts.append("<p>" + html.escape(notes).replace("\n\n", "</p><p>") + "</p>")
    for module, title, how in MACHINE:
        v = _MACHINE.get(module)
        if not v:
            continue
        parts.append(f"<h2 id='{module}'>{html.escape(title)}</h2>")
        parts.append(f"<p>{html.escape(v['verdict'])}: {html.escape(v['headline'])}.</p>")
        if v.get("png"):
            parts.append(f"<img src='{v['png']}' alt='{html.escape(title)}'>")
        parts.append(pd.read_csv(out / v["csv"]).to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"))
    for e in entries:
        if e["status"] != "ok":
            continue
        sm = e["summary"]
        parts.append(f"<h2 id='{e['module']}'>{html.escape(sm['title'])}</h2>")
        if sm.get("png"):
            parts.append(f"<img src='{sm['png']}' alt='{html.escape(sm['title'])}'>")
        df = pd.read_csv(out / sm["csv"])
        parts.append(df.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"))
        md = (out / sm["markdown"]).read_text().split("\n\n", 2)
        if len(md) > 2:
            # The notes after the table.
            notes = md[2].split("\n\n", 1)[-1]
            parts.append("<p>" + html.escape(notes).replace("\n\n", "</p><p>") + "</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def suite_names(suite_field: str) -> list:
    """The suite and part names a FIGURES entry's suite field mentions: "suites/ablation.toml (parts
    dali-fig19-mixtral, dali-fig19-qwen)" -> ["ablation", "dali-fig19-mixtral", "dali-fig19-qwen"]."""
    import re
    names = re.findall(r"suites/([\w.-]+)\.toml", suite_field)
    for inside in re.findall(r"\(parts? ([^)]*)\)", suite_field):
        names += [n.strip() for n in inside.split(",") if n.strip()]
    return names


def figures_of(names) -> list:
    """FIGURES entries produced by any of the suites or parts `names` (a part written with * in FIGURES
    matches every part of that pattern)."""
    import fnmatch
    return [f for f in FIGURES if any(fnmatch.fnmatch(n, pat) for pat in suite_names(f[3]) for n in names)]


def summary_main(a) -> int:
    """The verdicts of the figures one suite produces, one line each (run_suite prints them at the end of a
    paper suite); their figures and tables go to --out. The index is left as it is: make report writes it."""
    names = [n for n in a.only.split(",") if n]
    selected = figures_of(names)
    out = pathlib.Path(a.out)
    if not selected:
        print(f"no figure script reads suite(s) {', '.join(names)}")
        return 0
    global FIGURES
    everything, FIGURES = FIGURES, selected
    try:
        entries = run_all(a.results, out)
    finally:
        FIGURES = everything
    for e in entries:
        if e["status"] == "ok":
            h = e["summary"].get("headline", "")
            judged = f" in the {e['judged_in']} comparison; {other_text(e)}" if e.get("other_comparison") else ""
            print(f"  {e['paper']} {e['figure']}: {common.verdict_of(e['summary'])}{judged}"
                  + (f" ({h[:200]}{'...' if len(h) > 200 else ''})" if h else ""))
        else:
            print(f"  {e['paper']} {e['figure']}: {e['status']}" + (f" (run {e['suite']})" if e["status"] == "not run"
                                                                      else ""))
    print(f"figures and tables: {out}/ (markdown, CSV and PNG per figure); every figure with its verdict and the "
          f"before/after table: make report")
    return 1 if any(e["status"] == "error" for e in entries) else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", default="results/report")
    ap.add_argument("--reference", default=str(REFERENCE), help="reference verdicts to compare with")
    ap.add_argument("--accept", action="store_true", help="record today's verdicts as the reference")
    ap.add_argument("--only", help="comma-separated suite or part names: print the verdicts of the figures they "
                                   "produce, one line each, and leave the index alone (run_suite uses it)")
    a = ap.parse_args(argv)
    if a.only is not None:
        return summary_main(a)
    reference = pathlib.Path(a.reference)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    entries = run_all(a.results, out)
    run_testbeds(a.results, out)
    run_machine(a.results, out)
    common.write_text_atomic(out / "index.md", index_markdown(entries, a.results, reference, out))
    common.write_text_atomic(out / "index.html", index_html(entries, out, a.results, reference))
    ok = sum(e["status"] == "ok" for e in entries)
    print(f"wrote {out / 'index.md'} and {out / 'index.html'}: {ok} of {len(entries)} figures from results, "
          f"{len(PENDING)} pending groups")
    print(headline(entries))
    if a.accept:
        stale = stale_results(entries)
        if stale:
            print("report: refused to record the reference: results older than the code and presets they depend "
                  "on (rerun the suites, make predictors and make characterize from a clean tree):\n  "
                  + "\n  ".join(stale), file=sys.stderr)
            return 2
        accept_reference(entries, reference)
        print(f"wrote {reference}: the reference verdicts (commit it with the reason)")
    for e in entries:
        if e["status"] not in ("ok",):
            print(f"  {e['paper']} {e['figure']}: {e['status']}")
    return 1 if any(e["status"] == "error" for e in entries) else 0


if __name__ == "__main__":
    sys.exit(main())
