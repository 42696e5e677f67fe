#!/usr/bin/env python3
"""The audit's table: claims beside our verdicts and speed-ups.

    report.py CLAIMS.json WORK OUT_PREFIX [--device D] [--tasks DIR] [--seconds S]

Reads claims.json (extract.py), WORK/reports/<id>.check.json (kbcheck
TASK SOL --policy kernelbench) and <id>.prof.json (kbprof, where kbcheck
passed), and each task's task.json under --tasks (its `degenerate` flag).
Writes OUT_PREFIX.json (one object per solution; README.md lists the
fields) and OUT_PREFIX.md (the table).
"""
import argparse
import datetime
import json
import os


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def static_rules(check):
    rep = (((check or {}).get("stages") or {}).get("static") or {}).get("report") or {}
    return sorted({f.get("rule", "?") for f in rep.get("findings") or [] if f.get("severity", "error") == "error"})


def first_line(s, n=160):
    s = (s or "").strip().splitlines()[0] if (s or "").strip() else ""
    return s if len(s) <= n else s[: n - 3] + "..."


def row(claim, check, prof, task):
    r = {
        "id": claim["id"], "level": claim["level"], "task": claim["task"],
        "claimed_speedup": claim.get("claimed_speedup"),
        "claimed_speedup_vs_compile": claim.get("claimed_speedup_vs_compile"),
        "load_inline": claim.get("load_inline"),
        "degenerate": (task or {}).get("degenerate"),
        "check_status": (check or {}).get("status", "not_run"),
        "check_stage": (check or {}).get("stage"),
        "static_rules": static_rules(check),
        "profile_status": None, "speedup_vs_eager": None, "speedup_vs_compile": None,
        "own_kernel_share": None, "eager_baseline": None, "compile_baseline": None, "compile_error": None,
        "reason": None,
    }
    if r["check_status"] != "ok":
        if r["static_rules"]:
            r["reason"] = "static: " + ", ".join(r["static_rules"])
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
        if prof.get("status") != "ok":
            r["reason"] = "profile: " + first_line(prof.get("message"))
    status = r["check_status"] if r["check_status"] != "ok" else (r["profile_status"] or "ok (not profiled)")
    r["status"] = status
    return r


def fmt(x, suffix="x"):
    return "-" if x is None else f"{x:.2f}{suffix}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("claims")
    ap.add_argument("work")
    ap.add_argument("out")
    ap.add_argument("--device", default="")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--only", default="", help="comma-separated ids: the table has these rows only")
    a = ap.parse_args()
    claims = json.load(open(a.claims))
    rows = []
    gpu = None
    only = set(filter(None, a.only.split(",")))
    for c in claims["solutions"]:
        if only and c["id"] not in only:
            continue
        base = os.path.join(a.work, "reports", c["id"])
        check, prof = load(base + ".check.json"), load(base + ".prof.json")
        task = load(os.path.join(a.tasks, f"level{c['level']}", c["task"], "task.json")) if a.tasks else None
        gpu = gpu or (prof or {}).get("gpu") or (check or {}).get("gpu")
        rows.append(row(c, check, prof, task))
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    out = {
        "format": "kb-audit-results",
        "made_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": a.device, "gpu": gpu, "seconds": a.seconds,
        "corpus": claims.get("corpus"), "kernelbench": claims.get("kernelbench"),
        "policy": "kernelbench", "counts": counts, "solutions": rows,
    }
    with open(a.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    corpus = claims.get("corpus") or {}
    lines = [
        "# Audit of published solutions",
        "",
        f"Corpus: {corpus.get('source', '?')} at {corpus.get('commit', '?')[:12]} (claims measured on {corpus.get('gpu', '?')}); "
        f"tasks: KernelBench {claims.get('kernelbench', {}).get('version') or '(unversioned)'}. "
        f"Run on {gpu or a.device} ({a.device}), policy kernelbench, {out['made_at']}"
        + (f", {a.seconds:.0f} s" if a.seconds is not None else "") + ".",
        "",
        "Status counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ".",
        "",
        "| solution | claimed | claimed vs compile | status | ours vs eager | ours vs compile | own kernels | degenerate | reason |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        deg = "-" if not r["degenerate"] else "yes (" + ", ".join(r["degenerate"].get("contracts") or ["?"]) + ")"
        share = "-" if r["own_kernel_share"] is None else f"{100 * r['own_kernel_share']:.0f}%"
        reason = (r["reason"] or "").replace("|", "\\|")
        lines.append(f"| {r['id']} | {fmt(r['claimed_speedup'])} | {fmt(r['claimed_speedup_vs_compile'])} | {r['status']} | "
                     f"{fmt(r['speedup_vs_eager'])} | {fmt(r['speedup_vs_compile'])} | {share} | {deg} | {reason} |")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
