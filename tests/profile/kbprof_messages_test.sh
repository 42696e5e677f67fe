#!/usr/bin/env bash
# Issue 38: a kbprof verdict's message agrees with the report it sits in.
# The wrong CPU solutions of testdata/solutions-cpu (their correctness seeds
# are all incorrect) must not be said to have had right verification calls,
# and the message says how many correctness seeds failed; a solution right on
# the seeds and wrong on timed calls (solutions-cpu-timed/lazy_after_warmup)
# is said to be so, and with --no-verify no seeds are claimed to be right.
# Usage: kbprof_messages_test.sh KBPROF WORKDIR   (KB_WORKER, KB_SOURCE_ROOT set)
set -uo pipefail
KBPROF="$1"; WORK="$2"
SRC="${KB_SOURCE_ROOT:?}/testdata"
TASK="$SRC/tasks/linear_relu"
rm -rf "$WORK"; mkdir -p "$WORK"
fail=0

# check NAME SOLUTION [FLAGS...]: the message against the report's seeds.
check() {
  local name="$1" sol="$2"; shift 2
  local rep="$WORK/$name.json"
  "$KBPROF" "$TASK" "$sol" --device cpu --cache-dir "$WORK/cache" --budget 1 -q --json "$rep" "$@" 2>"$WORK/$name.err"
  local status msg seeds seeds_failed calls calls_failed
  status=$(jq -r .status "$rep" 2>/dev/null || echo none)
  msg=$(jq -r .message "$rep" 2>/dev/null)
  seeds=$(jq '[.seeds[] | select(.timed_call == null)] | length' "$rep" 2>/dev/null || echo 0)
  seeds_failed=$(jq '[.seeds[] | select(.timed_call == null and .status != "ok")] | length' "$rep" 2>/dev/null || echo 0)
  calls=$(jq '.timed_calls // 0' "$rep" 2>/dev/null || echo 0)
  calls_failed=$(jq '[.seeds[] | select(.timed_call != null and .status != "ok")] | length' "$rep" 2>/dev/null || echo 0)
  local bad=""
  [ "$status" = incorrect ] || bad="status $status, expected incorrect"
  if [ -z "$bad" ] && [ "$seeds_failed" -gt 0 ]; then
    grep -qiE "were right|was right" <<<"$msg" && bad="says something was right although $seeds_failed of $seeds correctness seeds failed"
    grep -qF "$seeds_failed of $seeds correctness seeds" <<<"$msg" || bad="${bad:+$bad; }does not say $seeds_failed of $seeds correctness seeds failed"
    if [ "$calls" -gt 0 ]; then
      grep -qF "$calls_failed of $calls timed calls" <<<"$msg" || bad="${bad:+$bad; }does not say $calls_failed of $calls timed calls failed"
    fi
  elif [ -z "$bad" ] && [ "$seeds" -gt 0 ]; then
    grep -qF "although all $seeds correctness seeds were right" <<<"$msg" || bad="the $seeds correctness seeds were right and the message does not say so"
    grep -qE "^timed call [0-9]+ " <<<"$msg" || bad="${bad:+$bad; }does not name the timed call"
  elif [ -z "$bad" ]; then
    grep -qiE "were right|was right" <<<"$msg" && bad="claims right seeds although none ran"
    grep -qF "no correctness seeds were run" <<<"$msg" || bad="${bad:+$bad; }does not say no correctness seeds ran"
  fi
  if [ -n "$bad" ]; then
    echo "FAIL $name: $bad"; echo "     message: $msg"; head -c 400 "$WORK/$name.err"; fail=1
  else
    echo "ok   $name ($seeds_failed of $seeds seeds, $calls_failed of $calls calls failed)"
  fi
}

for s in wrong_result tol_outside off_by_one wrong_shape; do check "$s" "$SRC/solutions-cpu/$s"; done
check lazy_after_warmup "$SRC/solutions-cpu-timed/lazy_after_warmup"
check lazy_no_verify "$SRC/solutions-cpu-timed/lazy_after_warmup" --no-verify
[ $fail = 0 ] && echo "all messages agree with their reports"
exit $fail
