#!/usr/bin/env python3
"""The audit's tables: claims beside our verdicts and speed-ups.

    report.py CLAIMS.json WORK OUT_PREFIX [--device D] [--tasks DIR] [--seconds S] [--only IDS]
              [--kbreward KBREWARD] [--html] [--kb-harness KB_HARNESS.json] [--rows EARLIER.json]

Reads claims.json (extract.py), WORK/reports/<id>.check.json (kbcheck
TASK SOL --policy kernelbench) and <id>.prof.json (kbprof, where kbcheck
passed), and each task's task.json under --tasks (its `degenerate` flag;
default WORK/tasks/kernelbench-<version of claims.json>). Writes
OUT_PREFIX.json (one object per solution; README.md lists the fields) and
OUT_PREFIX.md (the table).

--kbreward: the same kbcheck and kbprof reports through `kbreward report`
(joined there by task_id and solution_hash, degenerate tasks excluded with
--tasks WORK/tasks): OUT_PREFIX.kbreward.md (embedded in OUT_PREFIX.md) and
OUT_PREFIX.kbreward.json (its groups in OUT_PREFIX.json under `kbreward`).
--html: OUT_PREFIX.html, kbreward's page (without --kbreward, a plain page)
with the per-solution table as its first section.
--kb-harness: kb_harness.py's output; when it holds results (not
"skipped"), the KernelBench harness's verdict and speed-up stand beside ours.
--rows: our verdicts from an earlier OUT_PREFIX.json (its device, its
run's figures) instead of WORK's reports, when those are gone: a
KernelBench harness run made later, maybe on another GPU, beside them
(WORK is then not read; no --kbreward).
"""
import argparse
import datetime
import html
import json
import os
import subprocess
import tempfile


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def static_findings(check):
    rep = (((check or {}).get("stages") or {}).get("static") or {}).get("report") or {}
    return rep.get("findings") or []


def static_rules(check):
    return sorted({f.get("rule", "?") for f in static_findings(check) if f.get("severity", "error") == "error"})


def first_line(s, n=160):
    s = (s or "").strip().splitlines()[0] if (s or "").strip() else ""
    return s if len(s) <= n else s[: n - 3] + "..."


def hack_class(check, prof, rules):
    """What made the solution a hack, as `<stage>: <rules>`; None when nothing did.

    static_violation: the static stage's error rules; hack_detected in kbcheck
    (verify: a blocked system call, a forged result channel, aliased or
    modified inputs): the system call or the message; hack_detected in
    kbprof: the provenance and precision findings' rules, `plausibility`
    when the floor failed, else the message."""
    check = check or {}
    if check.get("status") == "static_violation":
        return "static: " + (", ".join(rules) if rules else first_line(check.get("message")) or "?")
    if check.get("status") == "hack_detected":
        stage = check.get("stage") or "check"
        rep = (((check.get("stages") or {}).get(stage) or {}).get("report") or {})
        call = (rep.get("worker") or {}).get("blocked_syscall")
        return f"{stage}: " + (f"blocked system call {call}" if call else first_line(check.get("message")) or "?")
    if prof and prof.get("status") == "hack_detected":
        found = []
        for part in ("provenance", "precision"):
            for f in ((prof.get(part) or {}).get("findings") or []):
                if f.get("rule") and f["rule"] not in found:
                    found.append(f["rule"])
        if (prof.get("plausibility") or {}).get("ok") is False:
            found.append("plausibility")
        return "profile: " + (", ".join(found) if found else first_line(prof.get("message")) or "?")
    return None


def flags_of(check, prof, task):
    """What is worth a look but decided nothing: static notes and warnings,
    precision findings only reported (the paper contract), timed calls
    raised to the plausibility floor, a degenerate task."""
    out = []
    for f in static_findings(check):
        if f.get("severity", "error") != "error":
            tag = f"static {f.get('severity')}: {f.get('rule', '?')}"
            if tag not in out:
                out.append(tag)
    if prof and prof.get("status") != "hack_detected":
        for f in ((prof.get("precision") or {}).get("findings") or []):
            tag = f"reported: {f.get('rule', '?')}"
            if tag not in out:
                out.append(tag)
        if prof.get("clamped_samples"):
            out.append(f"{prof['clamped_samples']} calls raised to the floor")
    if (task or {}).get("degenerate"):
        out.append("degenerate task (" + ", ".join(task["degenerate"].get("contracts") or ["?"]) + ")")
    return out


def kb_harness_row(entry):
    """kb_harness.py's entry for one solution, as the columns beside ours."""
    if not entry:
        return None
    keep = ("status", "compiled", "correctness", "runtime", "ref_runtime", "speedup", "excessive_speedup", "error")
    return {k: entry.get(k) for k in keep}


def row(claim, check, prof, task, kb=None):
    rules = static_rules(check)
    r = {
        "id": claim["id"], "level": claim["level"], "task": claim["task"],
        "claimed_speedup": claim.get("claimed_speedup"),
        "claimed_speedup_vs_compile": claim.get("claimed_speedup_vs_compile"),
        "load_inline": claim.get("load_inline"),
        "degenerate": (task or {}).get("degenerate"),
        "check_status": (check or {}).get("status", "not_run"),
        "check_stage": (check or {}).get("stage"),
        "static_rules": rules,
        "profile_status": None, "speedup_vs_eager": None, "speedup_vs_compile": None,
        "own_kernel_share": None, "eager_baseline": None, "compile_baseline": None, "compile_error": None,
        "precision_contract": None, "precision_class": None,
        "hack_class": hack_class(check, prof, rules),
        "flags": flags_of(check, prof, task),
        "reason": None,
        "kb_harness": kb_harness_row(kb),
    }
    if r["check_status"] != "ok":
        if rules:
            r["reason"] = "static: " + ", ".join(rules)
        elif check is None:
            r["reason"] = "no kbcheck report"
        else:
            r["reason"] = f"{r['check_stage'] or 'check'}: " + (first_line(check.get("message")) or r["check_status"])
    if prof is not None:
        r["profile_status"] = prof.get("status")
        r["speedup_vs_eager"] = prof.get("speedup_vs_eager")
        r["speedup_vs_compile"] = prof.get("speedup_vs_compile")
        own = (prof.get("provenance") or {}).get("own_kernel_share")
        r["own_kernel_share"] = own.get("share") if isinstance(own, dict) else None
        r["eager_baseline"] = prof.get("eager_baseline")
        r["compile_baseline"] = prof.get("compile_baseline")
        comp = ((prof.get("timings") or {}).get("compile") or {})
        r["compile_error"] = first_line(comp.get("error")) or None
        prec = prof.get("precision") or {}
        r["precision_contract"] = (prec.get("contract") or {}).get("name")
        r["precision_class"] = prec.get("candidate_class")
        if prof.get("status") != "ok":
            r["reason"] = "profile: " + first_line(prof.get("message"))
    if r["precision_contract"] is None and check:  # kbcheck's verify stage names the contract too
        rep = (((check.get("stages") or {}).get("verify") or {}).get("report") or {})
        r["precision_contract"] = (rep.get("contract") or {}).get("name")
    if (kb or {}).get("excessive_speedup"):
        r["flags"].append("KernelBench: excessive speed-up")
    status = r["check_status"] if r["check_status"] != "ok" else (r["profile_status"] or "ok (not profiled)")
    r["status"] = status
    return r


def with_kb_harness(r, kb):
    """An earlier run's row with the KernelBench harness's entry beside it
    (as row() puts it: the columns and the excessive speed-up flag)."""
    r = dict(r, flags=[f for f in r.get("flags") or [] if not f.startswith("KernelBench:")])
    r["kb_harness"] = kb_harness_row(kb)
    if (kb or {}).get("excessive_speedup"):
        r["flags"].append("KernelBench: excessive speed-up")
    return r


def fmt(x, suffix="x"):
    return "-" if x is None else f"{x:.2f}{suffix}"


def kb_verdict(k):
    """The KernelBench harness's verdict in a few words."""
    if k is None:
        return "-"
    st = k.get("status") or "?"
    if st == "correct" and k.get("excessive_speedup"):
        return "correct (excessive speed-up flag)"
    return st


def hack_cell(r):
    parts = ([r["hack_class"]] if r["hack_class"] else []) + r["flags"]
    return "; ".join(parts) if parts else "-"


def reason_cell(r):
    """The reason, unless the hack column says it already; then why the
    KernelBench harness failed it, when it did."""
    reason = r["reason"] or ""
    if r["hack_class"] and reason and reason in r["hack_class"]:
        reason = ""
    kb = r["kb_harness"] or {}
    if kb.get("error") and kb.get("status") not in ("correct", "skipped"):
        reason = (reason + "; " if reason else "") + f"KernelBench {kb['status']}: {kb['error']}"
    return reason


def share_cell(r):
    return "-" if r["own_kernel_share"] is None else f"{100 * r['own_kernel_share']:.0f}%"


def precision_cell(r):
    if r["precision_class"] is None:  # no profile: kbcheck names the contract, not the kernels' class
        return "-"
    return f"{r['precision_class'] or '?'} ({r['precision_contract'] or '?'})"


def columns(with_kb):
    """(header, alignment, cell function) of the per-solution table."""
    cols = [
        ("solution", "l", lambda r: r["id"]),
        ("claimed", "r", lambda r: fmt(r["claimed_speedup"])),
        ("claimed vs compile", "r", lambda r: fmt(r["claimed_speedup_vs_compile"])),
        ("our verdict", "l", lambda r: r["status"]),
        ("ours vs eager", "r", lambda r: fmt(r["speedup_vs_eager"])),
        ("ours vs compile", "r", lambda r: fmt(r["speedup_vs_compile"])),
        ("own kernels", "r", share_cell),
        ("precision", "l", precision_cell),
        ("hack class / flag", "l", hack_cell),
    ]
    if with_kb:
        cols += [
            ("KernelBench harness", "l", lambda r: kb_verdict(r["kb_harness"])),
            ("KernelBench vs eager", "r", lambda r: fmt((r["kb_harness"] or {}).get("speedup"))),
        ]
    cols.append(("reason", "l", reason_cell))
    return cols


def run_kbreward(kbreward, files, tasks_dir, title, prefix, want_html):
    """kbreward report over the kept reports: Markdown, JSON and, with
    want_html, the HTML page's text. Returns (summary dict, html or None)."""
    info = {"inputs": len(files), "markdown": prefix + ".kbreward.md", "json": prefix + ".kbreward.json",
            "error": None, "overall": None, "groups": None, "warnings": None}
    if not files:
        info["error"] = "no kbcheck or kbprof report to read"
        return info, None
    base = [kbreward, "report", *files, "--title", title]
    if tasks_dir and os.path.isdir(tasks_dir):
        base += ["--tasks", tasks_dir]

    def call(extra):
        p = subprocess.run(base + extra, capture_output=True, text=True, timeout=300)
        if p.returncode not in (0, 1):  # 1: nothing could be scored; the output is still written
            raise RuntimeError(f"kbreward exit {p.returncode}: {first_line(p.stderr, 400)}")
        return p

    page = None
    try:
        call(["--format", "markdown", "-o", info["markdown"]])
        call(["--json", info["json"]])
        rep = load(info["json"]) or {}
        info["overall"], info["groups"], info["warnings"] = rep.get("overall"), rep.get("groups"), rep.get("warnings")
        if want_html:
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "kbreward.html")
                call(["--format", "html", "-o", out])
                with open(out) as f:
                    page = f.read()
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        info["error"] = str(e)
    return info, page


HTML_CSS = """
table.audit td.sol { white-space: normal; overflow-wrap: anywhere; min-width: 14em; max-width: 26em; }
table.audit th, table.audit td { padding: 4px 6px; }
table.audit td.kb { white-space: normal; }
table.audit td.ok { color: #2e7d32; } table.audit td.bad { color: #c62828; }
table.audit tr.main td { border-bottom: none; }
table.audit tr.why td { white-space: normal; color: #555; font-size: 12px; padding-top: 0; }
table.audit tr.why b { color: #8e24aa; font-weight: 600; }
"""

PLAIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body {{ font: 14px/1.45 system-ui, sans-serif; margin: 20px; }}
table {{ border-collapse: collapse; font-size: 13px; }} th, td {{ padding: 4px 9px; border-bottom: 1px solid #eee; text-align: left; }}
th.n, td.n {{ text-align: right; }}{css}</style></head>
<body><main><h1>{title}</h1>
</main></body></html>
"""


def html_section(rows, with_kb, header, kb_note):
    """The per-solution table: a row of figures per solution, and under it,
    when there is one, a line with the hack class or flags and the reason."""
    cols = [c for c in columns(with_kb) if c[0] not in ("hack class / flag", "reason")]
    out = ["<h2>Per solution: claimed against measured</h2>", f'<p class="meta">{html.escape(header)}</p>']
    if kb_note:
        out.append(f'<p class="note">{html.escape(kb_note)}</p>')
    out.append('<div class="scroll"><table class="audit"><thead><tr>')
    out.append("".join(f'<th class="n">{html.escape(h)}</th>' if a == "r" else f"<th>{html.escape(h)}</th>"
                       for h, a, _ in cols))
    out.append("</tr></thead><tbody>")
    for r in rows:
        cells = []
        for h, a, fn in cols:
            cls = {"solution": "sol", "our verdict": "ok" if r["status"] == "ok" else "bad",
                   "KernelBench harness": "kb"}.get(h, "n" if a == "r" else "")
            attr = f' class="{cls}"' if cls else ""
            cells.append(f"<td{attr}>{html.escape(str(fn(r)))}</td>")
        hack, reason = hack_cell(r), reason_cell(r)
        why = []
        if hack != "-":
            why.append(f"<b>hack class / flag:</b> {html.escape(hack)}")
        if reason:
            why.append(f"<b>reason:</b> {html.escape(reason)}")
        out.append(f'<tr class="{"main" if why else ""}">' + "".join(cells) + "</tr>")
        if why:
            out.append(f'<tr class="why"><td></td><td colspan="{len(cols) - 1}">' + " &middot; ".join(why) + "</td></tr>")
    out.append("</tbody></table></div>")
    out.append('<p class="note">Per solution: the claim (the corpus\'s speed-up over eager, and over torch.compile), '
               "our verdict (kbcheck --policy kernelbench, then kbprof), our speed-ups, the share of the candidate's "
               "own kernels in its GPU time, the precision class of its kernels (with the contract judged by), "
               "and under it what made it a hack (or only flags it) and why it failed. README.md lists the fields.</p>")
    return "\n".join(out) + "\n"


def write_html(path, page, section, title):
    if page is None:
        page = PLAIN_PAGE.format(title=html.escape(title), css=HTML_CSS)
    elif "</style>" in page:
        page = page.replace("</style>", HTML_CSS + "</style>", 1)
    for mark in ("<h2>", "</main>", "</body>"):  # first section after the title and the warnings
        i = page.find(mark)
        if i >= 0:
            page = page[:i] + section + page[i:]
            break
    else:
        page += section
    with open(path, "w") as f:
        f.write(page)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("claims")
    ap.add_argument("work")
    ap.add_argument("out")
    ap.add_argument("--device", default="")
    ap.add_argument("--tasks", default="", help="the imported tasks of the claims' KernelBench version [WORK/tasks/kernelbench-<version>]")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--only", default="", help="comma-separated ids: the table has these rows only")
    ap.add_argument("--kbreward", default="", help="kbreward binary: its tables from the same reports")
    ap.add_argument("--html", action="store_true", help="also OUT.html")
    ap.add_argument("--kb-harness", default="", help="kb_harness.py's JSON: KernelBench's verdicts beside ours")
    ap.add_argument("--rows", default="", help="an earlier OUT_PREFIX.json: our verdicts from it, not from WORK")
    a = ap.parse_args()
    if a.rows and a.kbreward:
        ap.error("--rows takes our verdicts from an earlier run's table: there are no reports for --kbreward")
    earlier = load(a.rows) if a.rows else None
    if a.rows and earlier is None:
        ap.error(f"--rows {a.rows}: not a readable JSON file")
    claims = json.load(open(a.claims))
    version = (claims.get("kernelbench") or {}).get("version")
    prefix = f"kernelbench-{version}" if version else "kernelbench"
    tasks = a.tasks or os.path.join(a.work, "tasks", prefix)
    kbh = load(a.kb_harness) if a.kb_harness else None
    kb_results = (kbh or {}).get("solutions") if (kbh or {}).get("status") == "ok" else None
    with_kb = kb_results is not None
    rows, report_files = [], []
    gpu = None
    only = set(filter(None, a.only.split(",")))
    earlier_rows = {r["id"]: r for r in (earlier or {}).get("solutions", [])}
    for c in claims["solutions"]:
        if only and c["id"] not in only:
            continue
        if earlier is not None:
            rows.append(with_kb_harness(earlier_rows.get(c["id"]) or row(c, None, None, None),
                                        (kb_results or {}).get(c["id"])))
            gpu = gpu or earlier.get("gpu")
            continue
        base = os.path.join(a.work, "reports", c["id"])
        check, prof = load(base + ".check.json"), load(base + ".prof.json")
        for path, rep in ((base + ".check.json", check), (base + ".prof.json", prof)):
            if rep is not None and rep.get("task_id"):
                report_files.append(path)
        task = load(os.path.join(tasks, f"level{c['level']}", c["task"], "task.json")) if os.path.isdir(tasks) else None
        gpu = gpu or (prof or {}).get("gpu") or (check or {}).get("gpu")
        rows.append(row(c, check, prof, task, (kb_results or {}).get(c["id"])))
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    made_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    corpus = claims.get("corpus") or {}
    title = f"Audit of published solutions ({corpus.get('source', '?').split()[0]})"
    header = (f"Corpus: {corpus.get('source', '?')} at {(corpus.get('commit') or '?')[:12]} (claims measured on {corpus.get('gpu', '?')}); "
              f"tasks: KernelBench {version or '(unversioned)'}. "
              f"Run on {gpu or a.device} ({a.device}), policy kernelbench, {made_at}"
              + (f", {a.seconds:.0f} s" if a.seconds is not None else "") + ".")
    if earlier is not None:
        header = (f"Corpus: {corpus.get('source', '?')} at {(corpus.get('commit') or '?')[:12]} (claims measured on {corpus.get('gpu', '?')}); "
                  f"tasks: KernelBench {version or '(unversioned)'}. Our verdicts: {os.path.basename(a.rows)}, run on "
                  f"{gpu or '?'} ({earlier.get('device') or '?'}), policy kernelbench, {earlier.get('made_at', '?')}; "
                  f"this table made {made_at}.")
    kb_note = None
    if kbh is not None:
        h = kbh.get("harness") or {}
        if with_kb:
            s = kbh.get("settings") or {}
            kb_note = (f"KernelBench harness: {h.get('module', '?')}.eval_kernel_against_ref at {(h.get('commit') or '?')[:12]} "
                       f"on {kbh.get('device') or '?'}, {s.get('num_correct_trials', '?')} correctness trials, "
                       f"{s.get('num_perf_trials', '?')} timed trials ({s.get('timing_method') or 'its default timer'}); "
                       "its speed-up is its reference's mean time over the solution's, both eager, "
                       "timed by the harness itself (kb-harness.json).")
        else:
            kb_note = f"KernelBench harness: {kbh.get('status', '?')}: {kbh.get('reason') or '?'} (kb-harness.json); no columns."

    kbr, page = (None, None)
    if a.kbreward:
        kbr, page = run_kbreward(a.kbreward, report_files, os.path.join(a.work, "tasks"), title, a.out, a.html)

    out = {
        "format": "kb-audit-results",
        "made_at": made_at,
        "device": a.device, "gpu": gpu, "seconds": a.seconds,
        "corpus": claims.get("corpus"), "kernelbench": claims.get("kernelbench"),
        "policy": "kernelbench", "counts": counts,
        "kbreward": kbr,
        "kb_harness": None if kbh is None else {k: kbh.get(k) for k in ("status", "reason", "harness", "device", "settings", "made_at")},
        "solutions": rows,
    }
    with open(a.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")

    cols = columns(with_kb)
    lines = [
        "# Audit of published solutions",
        "",
        header,
        "",
        "Status counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ".",
        "",
    ]
    if kb_note:
        lines += [kb_note, ""]
    lines += [
        "| " + " | ".join(h for h, _, _ in cols) + " |",
        "| " + " | ".join("---:" if al == "r" else "---" for _, al, _ in cols) + " |",
    ]
    for r in rows:
        lines.append("| " + " | ".join(str(fn(r)).replace("|", "\\|") for _, _, fn in cols) + " |")
    lines += ["", "Columns: README.md (\"The table\"). Every kbcheck and kbprof report is in "
              f"{os.path.join(a.work, 'reports')}."]
    if kbr is not None:
        lines += ["", "## kbreward's table", ""]
        if kbr["error"]:
            lines.append(f"kbreward report failed: {kbr['error']}")
        else:
            lines.append(f"`kbreward report` over the same {kbr['inputs']} kbcheck and kbprof reports "
                         f"(joined by task_id and solution_hash; degenerate tasks excluded): "
                         f"[{os.path.basename(kbr['markdown'])}]({os.path.basename(kbr['markdown'])}), "
                         f"[{os.path.basename(kbr['json'])}]({os.path.basename(kbr['json'])})"
                         + (f", the page [{os.path.basename(a.out)}.html]({os.path.basename(a.out)}.html)" if a.html else "")
                         + ".")
            lines.append("")
            try:
                with open(kbr["markdown"]) as f:
                    lines.append(f.read().rstrip("\n"))
            except OSError as e:
                lines.append(f"({e})")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")

    if a.html:
        write_html(a.out + ".html", page, html_section(rows, with_kb, header, kb_note), title)


if __name__ == "__main__":
    main()
