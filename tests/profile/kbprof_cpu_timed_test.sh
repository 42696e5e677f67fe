#!/usr/bin/env bash
# The timed-call protocol on the CPU (docs/threat-model.md, "Timed calls"):
# every solution of testdata/solutions-cpu-timed/expected.json through
# `kbcheck verify --device cpu` and `kbprof --device cpu` (host-clock timing:
# fresh inputs per call, outputs committed as each call returns, the calls to
# check picked by kbprof after the loop, scratch poisoned before every call,
# state digested after every call). Also: the picked calls are checked and
# differ between two runs, and every timed call had its own seed.
# Usage: kbprof_cpu_timed_test.sh KBPROF KBCHECK WORKDIR
set -uo pipefail
KBPROF="$1"; KBCHECK="$2"; WORK="$3"
SRC="${KB_SOURCE_ROOT:?}/testdata"
EXPECTED="$SRC/solutions-cpu-timed/expected.json"
rm -rf "$WORK"; mkdir -p "$WORK"
fail=0
for name in $(jq -r '.solutions | keys[]' "$EXPECTED"); do
  e=$(jq -c ".solutions[\"$name\"]" "$EXPECTED")
  task="$SRC/tasks/$(jq -r .task <<<"$e")"
  sol="$SRC/solutions-cpu-timed/$name"
  "$KBCHECK" verify "$task" "$sol" --device cpu --cache-dir "$WORK/cache" --json "$WORK/$name.verify.json" -q 2>"$WORK/$name.verify.err"
  got_v=$(jq -r .status "$WORK/$name.verify.json" 2>/dev/null || echo none)
  "$KBPROF" "$task" "$sol" --device cpu --cache-dir "$WORK/cache" --budget-s 1 --json "$WORK/$name.prof.json" -q \
    2>"$WORK/$name.prof.err"
  got_p=$(jq -r .status "$WORK/$name.prof.json" 2>/dev/null || echo none)
  msg=$(jq -r .message "$WORK/$name.prof.json" 2>/dev/null)
  want_v=$(jq -r .verify <<<"$e"); want_p=$(jq -c '[.profile] | flatten' <<<"$e"); want_m=$(jq -r '.message // ""' <<<"$e")
  verdict=ok
  if [ "$got_v" != "$want_v" ] || ! jq -e --arg g "$got_p" 'index($g) != null' <<<"$want_p" >/dev/null; then verdict=FAIL; fi
  if [ -n "$want_m" ] && ! grep -qF -- "$want_m" <<<"$msg"; then verdict=FAIL; fi
  printf '%-4s %-20s verify %-14s (want %-14s) profile %-14s (want %s)\n' "$verdict" "$name" "$got_v" "$want_v" "$got_p" "$want_p"
  if [ $verdict = FAIL ]; then
    fail=1
    echo "     message: $msg"; head -c 600 "$WORK/$name.prof.err" "$WORK/$name.verify.err"
  fi
done

# The protocol's own record of an honest run: host-clock timing, one commit
# per timed call with its own seed, every one of them checked by the
# reference (a seeds entry each, with its timed_call), and kbprof's own clock
# around each call (null calls before the candidate loaded).
p="$WORK/ok_host_object.prof.json"
jq -e '.timing_method == "host_clock" and .timed_calls >= 10 and (.checked_calls | length) == .timed_calls
       and ([.seeds[] | select(.timed_call != null)] | length) == .timed_calls
       and ([.seeds[] | select(.timed_call != null) | .timed_call] == .checked_calls)
       and ([.seeds[] | select(.timed_call != null) | .seed] | unique | length) == .timed_calls
       and .parent_clock.null_calls >= 1 and .parent_clock.window_median_ms > 0
       and (.input_method == "spec")' "$p" >/dev/null \
  || { echo "FAIL the honest run's protocol fields: $(jq -c '{timing_method,timed_calls,checked_calls,input_method,parent_clock}' "$p")"; fail=1; }
# A task with a scripted generator runs its own get_inputs for every call.
jq -e '.input_method == "scripted"' "$WORK/ok_symmetric.prof.json" >/dev/null \
  || { echo "FAIL scripted task: $(jq -c '{status,message,input_method}' "$WORK/ok_symmetric.prof.json")"; fail=1; }
[ $fail = 0 ] && echo "all as expected"
exit $fail
