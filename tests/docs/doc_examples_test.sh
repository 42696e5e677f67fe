#!/usr/bin/env bash
# The manuals' runnable examples, run as written (issue 38). A fenced block
# opened with exactly ```sh is runnable (docs/README.md, "Runnable
# examples"): it uses only testdata and the CPU, and runs with bash -e -o
# pipefail in a scratch folder where `testdata` is the repository's, the
# built tools first on PATH. It must exit 0, or N when its first line is
# `# exit: N`. Other blocks (``` without a language, indented ones) are
# illustrations with placeholders and are not run.
# Usage: doc_examples_test.sh SOURCE_ROOT BUILD_ROOT WORKDIR DOC...
set -uo pipefail
SRC="$1"; BUILD="$2"; WORK="$3"; shift 3
rm -rf "$WORK"; mkdir -p "$WORK"
export PATH="$BUILD/tools/kbcheck:$BUILD/tools/kbprof:$BUILD/tools/kbreward:$PATH"
export KB_WORKER="${KB_WORKER:-$BUILD/tools/kbcheck/kbcheck-worker}"
command -v jq > /dev/null || { echo "SKIP: jq is not installed"; exit 77; }

# Blocks known to fail, skipped with the issue that will fix them:
# "FILE:LINE-OF-THE-OPENING-FENCE reason". None at present.
SKIP=()

# The manuals that must hold at least one runnable block (kbreward.md's
# examples use placeholders so far: none is required there).
REQUIRED="kbcheck.md kbprof.md"

fail=0; ran=0
for doc in "$@"; do
  name=$(basename "$doc")
  dir="$WORK/${name%.md}"; mkdir -p "$dir"
  # Split the runnable blocks into DIR/LINE.sh, LINE being the fence's line.
  awk -v dir="$dir" '
    !inblock && $0 == "```sh" { inblock = 1; out = dir "/" NR ".sh"; printf "" > out; next }
    inblock && $0 ~ /^```/      { inblock = 0; close(out); next }
    inblock                     { print >> out }
  ' "$doc"
  n=0
  for line in $(ls "$dir" | sed -n 's/^\([0-9]*\)\.sh$/\1/p' | sort -n); do
    block="$dir/$line.sh"; where="$name:$line"; n=$((n + 1))
    skip=""
    for s in "${SKIP[@]+"${SKIP[@]}"}"; do [ "${s%% *}" = "$where" ] && skip="${s#* }"; done
    if [ -n "$skip" ]; then echo "skip $where: $skip"; continue; fi
    if grep -qE -- '--device cuda|--gpus' "$block"; then
      echo "FAIL $where: a runnable block must run on the CPU"; fail=1; continue
    fi
    want=$(sed -n '1s/^# exit: \([0-9]*\)$/\1/p' "$block"); want=${want:-0}
    run="$dir/run-$line"; mkdir -p "$run"; ln -s "$SRC/testdata" "$run/testdata"
    (cd "$run" && timeout 120 bash -e -o pipefail "$block") > "$run.out" 2>&1
    got=$?; ran=$((ran + 1))
    if [ "$got" != "$want" ]; then
      echo "FAIL $where: exit $got, the block expects $want"; sed 's/^/     /' "$block"
      echo "     --- output:"; tail -n 15 "$run.out" | sed 's/^/     /'; fail=1
    else
      echo "ok   $where (exit $got)"
    fi
  done
  if [ $n -eq 0 ] && grep -qw "$name" <<<"$REQUIRED"; then
    echo "FAIL $name: no runnable (\`\`\`sh) block found"; fail=1
  fi
  [ $n -eq 0 ] && echo "note $name: no runnable block"
done
echo "$ran blocks run"
exit $fail
