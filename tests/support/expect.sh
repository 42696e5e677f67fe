# Sourced by the tool tests that count their failures (install_test.sh,
# kbsynth_test.sh, kbsynth_nonfinite_test.sh, kbsynth_synth_test.sh): "ok   - "
# and "FAIL - " lines, the count in `fails`.
#   ok WHAT / bad WHAT          print a line (bad also counts a failure)
#   expect WHAT CMD...          CMD must succeed
#   exit_code CMD...            CMD's exit status on stdout, its output dropped
fails=0
ok()  { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }
expect() {
  local what="$1"; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
exit_code() { "$@" >/dev/null 2>&1; echo $?; }
