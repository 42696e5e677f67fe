#!/usr/bin/env bash
# The fault-injection suite (issue 38): faults of the machine and bad inputs
# on every tool, each of which must end as docs/cli.md says, never as a
# verdict on a task or a candidate:
#   exit 3 (infrastructure) or 2 (bad input), the cause on the last stderr
#   line "TOOL: ..." (ENOSPC by name), nothing half-written under the
#   output's name, no temporary left behind.
# Cases: a full disk (a 1 MiB tmpfs in a user and mount namespace of our
# own: `unshare -rm`; skipped with a note where the kernel refuses one), no
# GPU with --device cuda (skipped on a GPU machine), oversized solution
# files (kbcheck, kbrollout --replay), a task bundle whose task.json
# disagrees with reference.pt, and a reference worker that fails (once: its
# check runs again; always: infra_error, exit 3).
#
# Usage: faults_test.sh SOURCE_ROOT WORKDIR KBCHECK KBPROF KBSYNTH KBROLLOUT KBTRAIN
set -uo pipefail
ROOT="$1"; WORK="$2"; KBCHECK="$3"; KBPROF="$4"; KBSYNTH="$5"; KBROLLOUT="$6"; KBTRAIN="$7"
T="$ROOT/testdata"
rm -rf "$WORK"; mkdir -p "$WORK/tmp"
export TMPDIR="$WORK/tmp"
pass=0; fail=0; skip=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; [ -n "${2:-}" ] && sed 's/^/    /' <<<"$2" | tail -8; fail=$((fail + 1)); }
skipped() { echo "SKIP: $1"; skip=$((skip + 1)); }

# expect NAME TOOL WANT_RC LAST_LINE_REGEX -- CMD...: the exit code, and the
# last stderr line is "TOOL: ..." matching the regex.
n=0
expect() {
  local name="$1" tool="$2" want="$3" re="$4"; shift 5
  n=$((n + 1))
  local err="$WORK/case$n.err"
  timeout 300 "$@" >"$WORK/case$n.out" 2>"$err" </dev/null
  local rc=$?
  local last; last=$(grep -v '^$' "$err" | tail -1)
  if [ "$rc" != "$want" ]; then bad "$name: exit $rc, want $want" "$(cat "$err")"; return 1; fi
  if ! grep -qE "^$tool: " <<<"$last"; then bad "$name: last stderr line is not '$tool: ...'" "$(cat "$err")"; return 1; fi
  if ! grep -qE -- "$re" <<<"$last"; then bad "$name: last line does not say /$re/" "$last"; return 1; fi
  if grep -qE "Traceback|terminate called|Aborted" "$err"; then bad "$name: a traceback or abort on stderr" "$(cat "$err")"; return 1; fi
  ok "$name"
}
# No file named *.tmp.* (an atomic write's temporary) under DIR.
no_temporaries() {
  local left; left=$(find "$2" -name '*.tmp*' 2>/dev/null | head -5)
  if [ -n "$left" ]; then bad "$1: temporaries left behind" "$left"; else ok "$1: no temporaries left"; fi
}

# ---- a full disk ----------------------------------------------------------
# Each case runs inside `unshare -rm`: a tmpfs of 1 MiB at $FULL, filled to
# its last KiBs by a filler file, then the tool writes its output there.
FULL="$WORK/full"; mkdir -p "$FULL"
cat >"$WORK/full-disk" <<'SH'
#!/bin/sh
# full-disk DIR FREE_KIB CMD...: CMD with DIR a 1 MiB tmpfs filled up to
# its last FREE_KIB (a multiple of 4: its pages).
dir="$1"; free="$2"; shift 2
exec unshare -rm sh -c 'mount -t tmpfs -o size=1m tmpfs "$0" && dd if=/dev/zero of="$0/filler" bs=4k count=$(( (1024 - $1) / 4 )) 2>/dev/null; shift; exec "$@"' "$dir" "$free" "$@"
SH
chmod +x "$WORK/full-disk"
full_disk="$WORK/full-disk $FULL 0"       # not a byte free
nearly_full="$WORK/full-disk $FULL 8"     # two pages: a model.py fits, a reference.pt does not
if unshare -rm sh -c "mount -t tmpfs -o size=1m tmpfs '$FULL'" 2>/dev/null; then
  # kbcheck's report: exit 3, ENOSPC named, no report and no temporary.
  expect "full disk: kbcheck --json" kbcheck 3 "ENOSPC" -- \
    $full_disk sh -c "'$KBCHECK' verify '$T/tasks/linear_relu' '$T/solutions-cpu/ok_linear_relu' --device cpu -q --json '$FULL/out/report.json'; rc=\$?; if ls -A '$FULL/out' 2>/dev/null | grep -q .; then echo 'kbcheck: a file was left in the output folder' >&2; exit 99; fi; exit \$rc"
  # kbsynth import into a full disk: exit 3 naming ENOSPC, no bundle left.
  # Full: model.py cannot be written. Nearly full: model.py is, the capture's
  # reference.pt is not, and the capture's failure is the machine's (no
  # verdict on the task, its unfinished bundle removed).
  for how in full_disk nearly_full; do
    expect "$how: kbsynth import" kbsynth 3 "ENOSPC|No space left" -- \
      ${!how} sh -c "'$KBSYNTH' import '$T/tasks-src/kernelbench/level2/1_Conv2d_BatchNorm_Buffer.py' -o '$FULL/tasks' --compiled none --capture-device cpu; rc=\$?; if find '$FULL/tasks' -name task.json -o -name reference.pt 2>/dev/null | grep -q .; then echo 'kbsynth: a bundle was left behind' >&2; exit 99; fi; exit \$rc"
  done
  # kbrollout eval into a full disk: exit 3 naming it; no half-written JSON
  # (a 0-byte timeline.json was left) and no temporary.
  mkdir -p "$WORK/rt-full" "$WORK/replay-full/linear_relu"
  cp -r "$T/tasks/linear_relu" "$WORK/rt-full/"
  cp -r "$T/solutions-cpu/ok_linear_relu/." "$WORK/replay-full/linear_relu/"
  expect "full disk: kbrollout eval" kbrollout 3 "ENOSPC|No space left" -- \
    $nearly_full sh -c "'$KBROLLOUT' eval --tasks '$WORK/rt-full' --replay '$WORK/replay-full' --out '$FULL/ev' --device cpu --no-progress; rc=\$?; for f in timeline.json results.jsonl; do if [ -e '$FULL/ev/'\$f ] && ! jq -e . '$FULL/ev/'\$f >/dev/null 2>&1 && [ -s '$FULL/ev/'\$f ]; then echo \"kbrollout: a half-written \$f\" >&2; exit 99; fi; done; if find '$FULL' -name '*.tmp*' | grep -q .; then echo 'kbrollout: a temporary was left behind' >&2; exit 99; fi; exit \$rc"
  # kbtrain: a model that does not fit: exit 3, no partial safetensors.
  expect "full disk: kbtrain init-model" kbtrain 3 "ENOSPC" -- \
    $full_disk sh -c "'$KBTRAIN' init-model --config '$T/policy/llama-tiny/config.json' --tokenizer-from '$T/policy/llama-tiny' --out '$FULL/model'; rc=\$?; if ls '$FULL/model' 2>/dev/null | grep -q 'tmp'; then echo 'kbtrain: a temporary was left behind' >&2; exit 99; fi; exit \$rc"
else
  skipped "full disk: this kernel refuses a tmpfs in a user namespace (unshare -rm)"
fi

# ---- no GPU with --device cuda --------------------------------------------
mkdir -p "$WORK/rt" "$WORK/replay-ok/linear_relu"
cp -r "$T/tasks/linear_relu" "$WORK/rt/"
cp -r "$T/solutions-cpu/ok_linear_relu/." "$WORK/replay-ok/linear_relu/"
if [ -e /dev/nvidiactl ]; then
  skipped "no GPU: this machine has one"
else
  expect "no GPU: kbcheck verify --device cuda" kbcheck 3 "no NVIDIA GPU" -- \
    "$KBCHECK" verify "$T/tasks/linear_relu" "$T/solutions-cpu/ok_linear_relu" --device cuda
  expect "no GPU: kbprof --device cuda" kbprof 3 "no NVIDIA GPU" -- \
    "$KBPROF" "$T/tasks/linear_relu" "$T/solutions-cpu/ok_linear_relu" --device cuda --cache-dir "$WORK/cache"
  expect "no GPU: kbrollout eval --device cuda (at once, no rollout run)" kbrollout 3 "no NVIDIA GPU" -- \
    "$KBROLLOUT" eval --tasks "$WORK/rt" --replay "$WORK/replay-ok" --out "$WORK/rollout-nogpu" --device cuda --no-progress
  [ ! -s "$WORK/rollout-nogpu/trajectories.jsonl" ] && ok "no GPU: kbrollout wrote no trajectory" \
    || bad "no GPU: kbrollout wrote trajectories" "$(head -c 300 "$WORK/rollout-nogpu/trajectories.jsonl")"
fi

# ---- oversized solution files ---------------------------------------------
big="$WORK/big"; mkdir -p "$big/sol"
cp -r "$T/solutions-cpu/ok_linear_relu/." "$big/sol/"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' 'n' >"$big/sol/notes.txt"
expect "oversized: kbcheck, a 1 MiB + 1 notes file" kbcheck 2 "notes.txt.*over the limit" -- \
  "$KBCHECK" verify "$T/tasks/linear_relu" "$big/sol" --device cpu
mkdir -p "$big/replay/linear_relu"; cp -r "$big/sol/." "$big/replay/linear_relu/"
expect "oversized: kbrollout --replay, refused before anything is read" kbrollout 2 "over the limit" -- \
  "$KBROLLOUT" eval --tasks "$WORK/rt" --replay "$big/replay" --out "$WORK/rollout-big" --device cpu --no-progress
mkdir -p "$big/many/linear_relu"; cp -r "$T/solutions-cpu/ok_linear_relu/." "$big/many/linear_relu/"
for i in $(seq 1 300); do echo x >"$big/many/linear_relu/f$i.txt"; done
expect "oversized: kbrollout --replay, 300 files" kbrollout 2 "more than 256 files" -- \
  "$KBROLLOUT" eval --tasks "$WORK/rt" --replay "$big/many" --out "$WORK/rollout-many" --device cpu --no-progress

# ---- task.json that disagrees with reference.pt ---------------------------
# An output shape edited in task.json: bad input (exit 2), not ok.
mk_bundle() { rm -rf "$WORK/b-$1"; cp -r "$T/tasks/linear_relu" "$WORK/b-$1"; }
mk_bundle out
jq '.outputs[0].shape[1] += 1' "$T/tasks/linear_relu/task.json" >"$WORK/b-out/task.json"
expect "bundle: task.json output shape differs from reference.pt" kbcheck 2 "inconsistent: task.json says output 0" -- \
  "$KBCHECK" verify "$WORK/b-out" "$T/solutions-cpu/ok_linear_relu" --device cpu
# The batch size of an input edited: the reference's output is not what
# task.json says (exit 2, not 3).
mk_bundle in
jq '.inputs[0].shape[0] += 3' "$T/tasks/linear_relu/task.json" >"$WORK/b-in/task.json"
expect "bundle: task.json input shape differs from reference.pt" kbcheck 2 "inconsistent" -- \
  "$KBCHECK" verify "$WORK/b-in" "$T/solutions-cpu/ok_linear_relu" --device cpu

# ---- signals ---------------------------------------------------------------
# `timeout -s INT` delivers SIGINT twice (to the tool, then to its process
# group): one clean stop, exit 130, its line last, and the workers' folders
# gone. An infinite loop keeps the candidate busy until the signal.
for i in 1 2 3 4; do
  expect "SIGINT twice (timeout -s INT), kbcheck run $i" kbcheck 130 "interrupt|stopped" -- \
    timeout --preserve-status -s INT 3 "$KBCHECK" verify "$T/tasks/linear_relu" "$T/solutions-cpu/infinite_loop" --device cpu --timeout 60
done
for i in 1 2; do
  expect "SIGINT twice (timeout -s INT), kbprof run $i" kbprof 130 "interrupt|stopped" -- \
    timeout --preserve-status -s INT 3 "$KBPROF" "$T/tasks/linear_relu" "$T/solutions-cpu/infinite_loop" --device cpu --cache-dir "$WORK/cache"
done
left=$(find "$TMPDIR" -maxdepth 1 \( -name 'kb-reference-*' -o -name 'kbcheck-worker-*' \) 2>/dev/null | head -3)
[ -z "$left" ] && ok "signals: no worker folder left in TMPDIR" || bad "signals: worker folders left" "$left"

# The reference worker's own failure (a CUDA error of its own, say), made
# by a wrapper around the real worker (KB_WORKER): the candidate is gone and
# its outputs are on disk, so a fresh reference checks them and its verdict
# stands, the first failure reported by the worker's own line (not the last
# line of the error's text); one that fails every time is infra_error
# (exit 3), named the same way.
WORKER="$(cd "$(dirname "$KBCHECK")" && pwd)/kbcheck-worker"
for kind in once always; do
  cat >"$WORK/worker-$kind" <<EOF
#!/bin/sh
if [ "\$1" = reference ] && { [ $kind = always ] || [ ! -e "$WORK/failed-once" ]; }; then
  : >"$WORK/failed-once"
  printf 'kbcheck-worker reference: CUDA error: injected by the fault suite\nCUDA kernel errors might be asynchronously reported at some other API call\nCompile with TORCH_USE_CUDA_DSA to enable device-side assertions.\n' >&2
  exit 70
fi
exec "$WORKER" "\$@"
EOF
  chmod +x "$WORK/worker-$kind"
done
rm -f "$WORK/failed-once"
KB_WORKER="$WORK/worker-once" "$KBPROF" "$T/tasks/linear_relu" "$T/solutions-cpu/ok_linear_relu" --device cpu \
  --cache-dir "$WORK/cache" -q --json "$WORK/retry.json" >/dev/null 2>"$WORK/retry.err"
rc=$?
if [ $rc = 0 ] && [ "$(jq -r .status "$WORK/retry.json")" = ok ] &&
   jq -r '.reference_retry_after // ""' "$WORK/retry.json" | grep -q "CUDA error: injected"; then
  ok "a reference worker that fails once: checked again, ok, the first failure by its own line"
else
  bad "a reference worker that fails once: rc $rc, $(jq -c '{status, message, reference_retry_after}' "$WORK/retry.json" 2>&1)" "$(cat "$WORK/retry.err")"
fi
KB_WORKER="$WORK/worker-always" expect "a reference worker that always fails: infra_error naming its error" kbprof 3 \
  "CUDA error: injected" -- "$KBPROF" "$T/tasks/linear_relu" "$T/solutions-cpu/ok_linear_relu" --device cpu --cache-dir "$WORK/cache"

no_temporaries "the whole suite" "$WORK"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
