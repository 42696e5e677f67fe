#!/usr/bin/env bash
# kbsynth check on outputs with +inf, -inf and NaN (testdata/tasks/
# nonfinite_log): C++ and Python agreeing on every non-finite value is a
# difference of 0; Python giving 0 where C++ gives NaN is a mismatch (it read
# as "ok, difference 0" when the seeds' differences were folded with
# std::max, which drops a NaN).
# Usage: kbsynth_nonfinite_test.sh KBSYNTH WORKDIR
set -uo pipefail
KBSYNTH="$1"; WORK="$2"
SRC="${KB_SOURCE_ROOT:?}/testdata/tasks/nonfinite_log"
source "$(dirname "${BASH_SOURCE[0]}")/../support/expect.sh"
rm -rf "$WORK"; mkdir -p "$WORK"

"$KBSYNTH" check "$SRC" --device cpu --seeds 0,1 --no-compiled >"$WORK/same.jsonl" 2>"$WORK/same.err"
rc=$?
cat "$WORK/same.jsonl"
[ $rc -eq 0 ] && ok "agreeing non-finite outputs: exit 0" || { bad "agreeing non-finite outputs: exit $rc"; cat "$WORK/same.err"; }
[ "$(jq -r .status "$WORK/same.jsonl")" = ok ] && ok "status ok" || bad "status $(jq -r .status "$WORK/same.jsonl")"
[ "$(jq -r .reference_max_abs_diff "$WORK/same.jsonl")" = 0 ] && ok "difference 0" || bad "difference $(jq -r .reference_max_abs_diff "$WORK/same.jsonl")"

# The same bundle whose Python side writes 0 where the reference has NaN
# (everything else unchanged): model.py edited, its sha256 recorded anew.
cp -r "$SRC" "$WORK/tampered"
python3 - "$WORK/tampered" <<'PY'
import hashlib, json, sys
d = sys.argv[1]
src = open(f"{d}/model.py").read()
old = "        y = torch.log(x)\n"
assert src.count(old) == 1
src = src.replace(old, old + "        y = torch.nan_to_num(y, nan=0.0, posinf=float('inf'), neginf=float('-inf'))\n")
open(f"{d}/model.py", "w").write(src)
t = json.load(open(f"{d}/task.json"))
t["files"]["model.py"] = "sha256:" + hashlib.sha256(src.encode()).hexdigest()
json.dump(t, open(f"{d}/task.json", "w"), indent=2)
PY
"$KBSYNTH" check "$WORK/tampered" --device cpu --seeds 0,1 --no-compiled >"$WORK/nan.jsonl" 2>"$WORK/nan.err"
rc=$?
cat "$WORK/nan.jsonl"
[ $rc -eq 1 ] && ok "NaN against 0: exit 1" || bad "NaN against 0: exit $rc"
[ "$(jq -r .status "$WORK/nan.jsonl")" = mismatch ] && ok "status mismatch" || bad "status $(jq -r .status "$WORK/nan.jsonl")"
jq -e '.reference_max_abs_diff >= 1e300' "$WORK/nan.jsonl" >/dev/null && ok "difference reported as 1e300" \
  || bad "difference $(jq -r .reference_max_abs_diff "$WORK/nan.jsonl")"
[ $fails -eq 0 ] && echo "all ok" || echo "$fails failure(s)"
exit $((fails > 0))
