#!/usr/bin/env python3
"""Pick the audit's solutions from a published corpus and write them out.

    extract.py CORPUS.jsonl KB_DIR OUT [--commit SHA] [--source NAME] [--per-level 14,14,12] [--top 5]

CORPUS.jsonl: CUDA-L1's release file (optimized_cuda_code/<gpu>.json, one
object per line: level_id, task_id, ref_code, custom_code, score_default,
score_torch_compile_default, ...; README "Structure of Release Code").
KB_DIR: the KernelBench problem set the claims were measured on, with
level1..3 (CUDA-L1's ref_code is KernelBench v0's problem text:
scripts/kernelbench-extract.sh ... v0). OUT (outside the tree, e.g.
.kb/audit): one folder <level>_<task stem>/model_new.py per solution and
claims.json. The corpus is only read; nothing of it goes into the tree.

The pick, per level: the `--top` solutions with the largest claimed
speed-up (score_default: the eager reference's time over the solution's),
then the rest spread evenly over the remaining ones in claimed order
(typical ones, down to the smallest claims). Entries whose custom_code is
None ("no faster code found", README) are skipped.
"""
import argparse
import hashlib
import json
import os
import re
import sys


def problems(kb_dir, level):
    out = {}
    d = os.path.join(kb_dir, f"level{level}")
    for f in os.listdir(d):
        m = re.match(r"(\d+)_.*\.py$", f)
        if m:
            out[int(m.group(1))] = os.path.join(d, f)
    return out


def spread(items, n):
    """n items spread evenly over `items` (first and last included when n > 1)."""
    if n <= 0 or not items:
        return []
    if n >= len(items):
        return list(items)
    if n == 1:
        return [items[len(items) // 2]]
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("kb_dir")
    ap.add_argument("out")
    ap.add_argument("--commit", default="", help="the corpus repository's commit the file was read at")
    ap.add_argument("--source", default="github.com/deepreinforce-ai/CUDA-L1 optimized_cuda_code/h100.json")
    ap.add_argument("--gpu", default="H100", help="the GPU the corpus's claims were measured on")
    ap.add_argument("--per-level", default="14,14,12")
    ap.add_argument("--top", type=int, default=5)
    a = ap.parse_args()

    rows = [json.loads(line) for line in open(a.corpus) if line.strip()]
    counts = [int(x) for x in a.per_level.split(",")]
    manifest = {}
    mpath = os.path.join(a.kb_dir, "kernelbench-version.json")
    if os.path.exists(mpath):
        manifest = json.load(open(mpath))
    claims = []
    for level, n in zip((1, 2, 3), counts):
        files = problems(a.kb_dir, level)
        usable = [r for r in rows if r["level_id"] == level and r.get("custom_code") not in (None, "None", "")]
        usable.sort(key=lambda r: (-(r.get("score_default") or 0), r["task_id"]))
        top = usable[: a.top]
        picked = top + spread(usable[a.top :], n - len(top))
        for r in picked:
            task = files.get(r["task_id"])
            if not task:
                sys.exit(f"extract.py: level{level} problem {r['task_id']} is not in {a.kb_dir}")
            stem = os.path.splitext(os.path.basename(task))[0]
            ref = open(task).read()
            name = f"{level}_{stem}"
            os.makedirs(os.path.join(a.out, name), exist_ok=True)
            with open(os.path.join(a.out, name, "model_new.py"), "w") as f:
                f.write(r["custom_code"])
            code = r["custom_code"]
            claims.append({
                "id": name,
                "level": level,
                "task": stem,
                "task_id": r["task_id"],
                "task_file": f"level{level}/{os.path.basename(task)}",
                "why_picked": "largest claims" if r in top else "spread",
                "claimed_speedup": r.get("score_default"),
                "claimed_speedup_vs_compile": r.get("score_torch_compile_default"),
                "claimed_speedup_vs_compile_reduce_overhead": r.get("score_torch_compile_reduce_overhead"),
                "claimed_speedup_vs_cuda_graph": r.get("score_cuda_graph"),
                "gpu": a.gpu,
                "load_inline": "load_inline" in code,
                "ref_matches_task": r.get("ref_code", "").strip() == ref.strip(),
                "solution_sha256": hashlib.sha256(code.encode()).hexdigest(),
            })
    out = {
        "format": "kb-audit-claims",
        "corpus": {"source": a.source, "commit": a.commit, "file": os.path.basename(a.corpus), "licence": "MIT",
                   "gpu": a.gpu, "rows": len(rows)},
        "kernelbench": {"dir": os.path.abspath(a.kb_dir), "version": manifest.get("version", ""),
                        "commit": manifest.get("commit", "")},
        "selection": {"per_level": counts, "top": a.top,
                      "rule": "per level: the largest claimed speed-ups (score_default), then evenly spread over the rest in claimed order"},
        "solutions": claims,
    }
    with open(os.path.join(a.out, "claims.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    bad = [c["id"] for c in claims if not c["ref_matches_task"]]
    print(f"extract.py: {len(claims)} solutions into {a.out}"
          + (f"; reference text differs from {a.kb_dir} for {len(bad)}: {', '.join(bad)}" if bad else
             "; every reference text is the task file's, byte for byte"), file=sys.stderr)


if __name__ == "__main__":
    main()
