# Sourced by the CLI tests (tests/policy/kbpolicy_cli_test.sh,
# tests/rl/kbtrain_cli_test.sh): a scratch folder and two checks that print
# "ok"/"FAIL" lines and set `fail`.
#   check WHAT CMD...            CMD exits 0
#   expect_rc RC WHAT CMD...     CMD exits RC with exactly one line on stderr
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0
check() {  # description, command...
  local what="$1"; shift
  if "$@" >"$TMP/out" 2>"$TMP/err"; then echo "ok   $what"; else echo "FAIL $what"; cat "$TMP/out" "$TMP/err"; fail=1; fi
}
expect_rc() {  # rc, description, command...
  local want="$1" what="$2"; shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" -eq "$want" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then echo "ok   $what (exit $rc: $(cat "$TMP/err"))"
  else echo "FAIL $what: exit $rc, want $want"; cat "$TMP/err"; fail=1; fi
}
