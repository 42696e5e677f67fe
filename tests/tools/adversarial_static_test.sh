#!/usr/bin/env bash
# The CPU half of the adversarial suite (testdata/solutions-adversarial/
# expected.json): for every solution, `kbcheck static` reports exactly the
# expected rule ids (none for the legitimate fast solutions), and
# `kbcheck build` compiles it, so that on the GPU each one can only fail for
# run-time reasons. The run-time half is tests/gpu/adversarial_gpu_test.sh.
# Usage: adversarial_static_test.sh KBCHECK SOURCE_ROOT
#
# Whether nvcc is there is decided once, before any solution, by building a
# tiny CUDA solution: ok -> every solution is built, and any status but ok
# (infra_error included) is a failure; "compiler not found: .../nvcc" -> the
# build half is skipped for all, and the test ends with exit 77 (meson's
# SKIP) if the static half passed; any other outcome of that probe is an
# infrastructure failure of the test (exit 1).
set -uo pipefail
KBCHECK="$1"
ROOT="$2"
EXPECTED="$ROOT/testdata/solutions-adversarial/expected.json"
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0

mkdir -p "$TMP/probe/kernels"
printf '#include <kb/solution.h>\nKB_FORWARD(ctx) { (void)ctx; }\n' >"$TMP/probe/forward.cpp"
printf '__global__ void probe(float* y) { y[threadIdx.x] = 1.0f; }\n' >"$TMP/probe/kernels/probe.cu"
"$KBCHECK" build "$TMP/probe" -q --json "$TMP/probe.json" 2>"$TMP/probe.err"
probe_rc=$?
probe=$(jq -r '.status // "none"' "$TMP/probe.json" 2>/dev/null || echo none)
probe_msg=$(jq -r '.message // ""' "$TMP/probe.json" 2>/dev/null | head -c 300)
if [ "$probe" = ok ]; then
  have_nvcc=1
elif [ "$probe" = infra_error ] && grep -q 'compiler not found: .*nvcc' <<<"$probe_msg"; then
  have_nvcc=0
  echo "nvcc absent ($probe_msg): the build half is skipped for every solution"
else
  echo "FAIL: probe build of a minimal CUDA solution: status $probe, exit $probe_rc: $probe_msg"
  head -20 "$TMP/probe.err"
  exit 1
fi
printf '%-24s %-34s %-34s %s\n' solution "static expected" "static got" build
for name in $(jq -r '.solutions | keys[]' "$EXPECTED"); do
  e=$(jq -c ".solutions[\"$name\"]" "$EXPECTED")
  dir="$ROOT/testdata/$(jq -r .dir <<<"$e")"
  want=$(jq -c '.static // [] | sort' <<<"$e")
  "$KBCHECK" static "$ROOT/testdata/tasks/$(jq -r .task <<<"$e")" "$dir" -q \
    --json "$TMP/$name.static.json" 2>"$TMP/$name.static.err"
  rc=$?
  got=$(jq -c '[.findings[].rule] | unique' "$TMP/$name.static.json" 2>/dev/null || echo '"no report"')
  status=$(jq -r '.status // "none"' "$TMP/$name.static.json" 2>/dev/null || echo none)
  want_status=$([ "$want" = "[]" ] && echo ok || echo static_violation)
  verdict=""
  if [ "$got" != "$want" ] || [ "$status" != "$want_status" ]; then
    verdict="FAIL(static: $status, exit $rc)"
    fails=$((fails + 1))
  fi
  build="skipped"
  if [ $have_nvcc = 1 ]; then
    "$KBCHECK" build "$dir" -q --json "$TMP/$name.build.json" 2>"$TMP/$name.build.err"
    build=$(jq -r '.status // "none"' "$TMP/$name.build.json" 2>/dev/null || echo none)
    # nvcc was there for the probe: an infra_error here is a failure too.
    if [ "$build" != "ok" ]; then
      verdict="$verdict FAIL(build: $build)"
      fails=$((fails + 1))
    fi
  fi
  printf '%-24s %-34s %-34s %s %s\n' "$name" "$want" "$got" "$build" "$verdict"
  if [ -n "$verdict" ]; then
    sed 's/^/    /' "$TMP/$name.static.err" | head -20
    [ -f "$TMP/$name.build.json" ] && jq -r '.message // ""' "$TMP/$name.build.json" | head -c 2000 | sed 's/^/    /'
  fi
done
if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
if [ $have_nvcc = 0 ]; then
  echo "static half as expected; SKIP: the build half did not run (no nvcc)"
  exit 77
fi
echo "all as expected"
