#!/usr/bin/env bash
# A device call on exactly one commit: the device's copy of the working tree
# is the tree as it is while other work goes on, and its .git is not this
# repository's (a `git stash` there put a session's tree back to an older
# commit). So, here first:
#   bash scripts/gpu/carry.sh                         # .carry/ (dependencies)
#   git archive --format=tar.gz -o .carry/src.tgz HEAD
#   mkdir -p .kb/level2 && cp ../shared/kernelbench/level2/<task>.py .kb/level2/   # KernelBench inputs, never in the tree
# and on the device (run with carry [".carry", ".kb"]):
#   bash scripts/gpu/archive-run.sh STEP...
# Steps (each bounded, its log in $OUT as it ends):
#   build        the whole archive (tools, tests, the Python adapter where the device's
#                Python has its development files)
#   adversarial  tests/gpu/adversarial_gpu_test.sh on $ADV_ONLY (default: every entry)
#   bench        imports .kb/level2/12_Gemm_Multiply_LeakyReLU.py with its compiled
#                baseline (without it, and kbprof --no-aoti-build, where that build fails),
#                then scripts/bench/iteration.sh on it (issue 35: <= 2.3 s); BENCH_COMPILED=none:
#                no compiled baseline (kbprof --compile-baseline none), for a short call
#   python       testdata/solutions-python (KernelBench-format ModelNew) with --device cuda
#                (issue 37; needs the adapter: lib/pymodel with the device's python3-embed);
#                PYTHON_FORMAT_ONLY="NAME ...": only those entries (all take about 9 minutes)
#   kbadv        KernelBench's own adversarial kernels (its unit_tests/test_kernels/*.py, each
#                copied to .kb/kbadv/<name>/model_new.py from a KernelBench git dir, never in
#                the tree) on level1/1 (.kb/level1/1_Square_matrix_multiplication_.py):
#                kbcheck --policy kernelbench --device cuda, then kbprof where that passed
#   paperws      the CUDA Agent paper's released workspace (.kb/paper-workdir: its agent_workdir/,
#                never the tree) judged on its own model.py: kbcheck --device cuda, then kbprof (issue 37)
#   audit        issue 37's audit of published solutions: experiments/audit/run.sh on .kb/audit
#                (claims.json and <id>/model_new.py, from experiments/audit/extract.py) with the
#                tasks of .kb/kb-tasks (run.sh --prepare-from copies them): kbcheck --policy
#                kernelbench, then kbprof where it passed; about 9 minutes (AUDIT_TIMEOUT 540,
#                no kbprof starts after AUDIT_DEADLINE 380 s); run it in a call of its own after
#                tools or build; results.md/json and every report into $OUT
#   pybaseline   issue 37's like-for-like baselines (docs/kbprof.md "Baselines"): imports
#                .kb/level3/39_GRU.py (AOTInductor cannot build RNNs: torch.compile in Python
#                instead, task.json compile_baseline) and .kb/level2/12_Gemm_Multiply_LeakyReLU.py
#                with --compiled cuda; kbprof TASK on each, the level-2 native solution with the
#                default and --compile-baseline python, and a torch-only ModelNew made from each
#                .kb file (.kb/pyb, never the tree): eager and compile both Python's; reports
#                into $OUT (pyb-*.json), one summary line each
#   kbharness    KernelBench's own harness (eval_kernel_against_ref) on the audit's solutions:
#                experiments/audit/kb_harness.py with .kb/kernelbench-src (its README says how to
#                make it); kb-harness.json into $OUT, for report.py's KernelBench columns; with
#                .kb/kb-harness.json (an earlier call's, copied back) only the solutions it lacks run
#   tools        only kbcheck, kbcheck-worker, kbprof, kbsynth, kbreward and the Python adapter (a short
#                call; enough for every step but suite and serve)
#   suite        meson test --suite gpu on that build (testlog.json into $OUT); SUITE_ONLY:
#                the names of some of its tests (the whole suite takes longer than one call)
#   compile      issue 37's torch.compile figure for every KernelBench task: kbsynth import --compiled
#                cuda of .kb/kernelbench-all/level$COMPILE_LEVEL (default 3; the 250 problem files copied
#                from ../shared/kernelbench, never the tree), bounded by COMPILE_TIMEOUT (default 500 s);
#                $OUT/compile-level$COMPILE_LEVEL.tsv: id, baseline (aoti | python_compile | none), reason;
#                COMPILE_LEVEL="3 2 1": those levels one after another inside COMPILE_TIMEOUT
#                (level 3 took 332 s on the H200 without the Python check);
#                COMPILE_JOBS: parallel baseline jobs (default 8), CAPTURE_JOBS: capture workers
#                (default 8); a level cut short goes on
#                where it stopped when called again on the same warm machine (--skip-existing);
#                COMPILE_SRC: the folder of level<N>/ files instead of .kb/kernelbench-all
#   serve        builds kbserve, imports every .kb/level2/*.py without baselines and runs
#                scripts/bench/serve_load.py on testdata/solutions-kernelbench/level2
#                (issue 36; its default --compile-baseline none: no torch.compile figure and
#                no AOTInductor build on either side, kbserve or kbprof); needs httpx & co.
#                in .carry/py (copied from the venv); every evaluation's JSON into
#                $OUT/serve-reports.tgz; SERVE_ARGS: more kbserve flags (e.g. --gpu-share 1: one evaluation per GPU; the default, auto, shares each among 4 on an H100 or H200); SEQUENTIAL=0:
#                no kbprof one-after-another phase (default 1 round)
#   late         kbprof --late-start on testdata's linear_relu (LATE_RUNS times), kbprof and the worker only
#   servegpu     tests/gpu/serve_gpu_test.sh alone (SERVE_GPU_RUNS times, default 2) on kbserve and the
#                worker only (no whole build); each run's work folder into $OUT
# PACK=1 (any steps): everything in one $OUT/out.tgz, kept up to date step by step.
set -uo pipefail
R="$PWD"; S=/tmp/src; B=$S/build-gpu
OUT="${OUT:-$R/gpu-out}"; mkdir -p "$OUT"
# A device call brings back at most 8 files of $OUT (a ninth, a compile
# TSV, was lost on 2026-12-06). PACK=1: the steps write into /tmp/gpu-out,
# packed into $OUT/out.tgz before each step, at the end, and when the call's
# time limit stops this script (TERM): what had ended by then comes back.
PACKED=""
# Each $OUT gets a folder of its own there: two serve steps with OUT=$OUT/k1 and
# OUT=$OUT/k4 in one call write the same file names.
if [ "${PACK:-0}" = 1 ]; then PACKED="$OUT"; OUT=/tmp/gpu-out/$(echo "$PACKED" | md5sum | cut -c1-8); mkdir -p "$OUT"; fi
pack() { [ -z "$PACKED" ] || tar czf "$PACKED/out.tgz" -C "$OUT" . 2>/dev/null; return 0; }
trap pack EXIT
trap 'pack; exit 143' TERM
export PATH="$R/.carry/bin:$PATH" LD_LIBRARY_PATH="$R/.carry/lib/so"
SHA=$(sha256sum "$R/.carry/src.tgz" | cut -c1-16)
if [ ! -d $S ]; then
  mkdir -p $S && tar xzf "$R/.carry/src.tgz" -C $S && cp -r "$R/.carry" "$R/.kb" $S/ || exit 1
elif [ "$(cat $S/.src-sha 2>/dev/null)" != "$SHA" ]; then
  # A newer archive on a warm machine: only the files that changed are
  # copied in (new mtimes), so ninja rebuilds what they touch and no more.
  rm -rf /tmp/src.new && mkdir -p /tmp/src.new && tar xzf "$R/.carry/src.tgz" -C /tmp/src.new || exit 1
  (cd /tmp/src.new && find . -type f | while read -r f; do
     cmp -s "$f" "$S/$f" || { mkdir -p "$S/$(dirname "$f")"; cp "$f" "$S/$f"; echo "updated $f"; }; done) | tail -20
  rm -rf $S/.kb && cp -r "$R/.kb" $S/
fi
echo "$SHA" > $S/.src-sha
cd $S
for step in "$@"; do
  pack
  echo "== $step $(date +%T)"
  case "$step" in
    build)
      (time bash scripts/gpu/build.sh $B) >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
      [ -e $B/lib/pymodel/libkb_pymodel.so ] || echo "build: no Python adapter (python3-embed not found; see build.log)"
      tail -3 "$OUT/build.log" ;;
    tools)
      (time bash scripts/gpu/build.sh $B tools/kbcheck/kbcheck tools/kbcheck/kbcheck-worker tools/kbprof/kbprof \
        tools/kbsynth/kbsynth tools/kbreward/kbreward) >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
      ninja -C $B lib/pymodel/libkb_pymodel.so >>"$OUT/build.log" 2>&1 || echo "tools: no Python adapter (see build.log)"
      tail -3 "$OUT/build.log" ;;
    suite)
      # SUITE_ONLY="serve_gpu policy_gpu ...": those tests of the suite (its whole
      # run is longer than one call: python_format_gpu about 380 s,
      # adversarial_gpu about 300 s on an H100).
      timeout "${SUITE_TIMEOUT:-540}" meson test -C $B --no-rebuild --print-errorlogs --suite gpu ${SUITE_ONLY:-} >"$OUT/gpu-suite.log" 2>&1
      echo "suite rc=$?"; cp $B/meson-logs/testlog.json "$OUT/gpu-suite-testlog.json" 2>/dev/null
      grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:|^Timeout:" "$OUT/gpu-suite.log" | tail -12 ;;
    adversarial)
      ADV_ONLY="${ADV_ONLY:-}" KB_SOURCE_ROOT=$S timeout "${ADV_TIMEOUT:-420}" bash tests/gpu/adversarial_gpu_test.sh \
        $B/tools/kbcheck/kbcheck $B/tools/kbprof/kbprof true /tmp/advwork >"$OUT/adv.txt" 2>&1
      echo "adversarial rc=$?"
      tar czf "$OUT/adv-reports.tgz" --exclude=cache --exclude='baselines-*' -C /tmp advwork 2>/dev/null
      cut -c1-200 "$OUT/adv.txt" | grep -v "^  .*speedup" | tail -70 ;;
    bench)
      export KB_BASELINE_CACHE=/tmp/bl
      # BENCH_COMPILED=none: no compiled baseline at all (a short call: the package's build takes
      # ~150 s; the iteration's time does not change, a cached compile figure is not re-run).
      timeout 200 $B/tools/kbsynth/kbsynth import .kb/level2/12_Gemm_Multiply_LeakyReLU.py -o /tmp/kbt \
        --id kernelbench/level2/12_Gemm_Multiply_LeakyReLU --compiled "${BENCH_COMPILED:-cuda}" >"$OUT/kb-import.log" 2>&1
      rc=$?; echo "import rc=$rc"; tail -2 "$OUT/kb-import.log"
      # No AOTInductor package (its build failed or ran out of time: on 2026-12-06 baseline.py died of
      # SIGSEGV under /opt/gcc's g++ and the retry with c++ passed the bound): the bundle without it, and
      # kbprof never builds one (--no-aoti-build: torch.compile in Python instead, cached after iteration 1).
      bench_args=""
      [ "${BENCH_COMPILED:-cuda}" = none ] && bench_args="--compile-baseline none"
      if [ "${BENCH_COMPILED:-cuda}" != none ] && { [ $rc != 0 ] || [ ! -e /tmp/kbt/kernelbench/level2/12_Gemm_Multiply_LeakyReLU/task.json ]; }; then
        rm -rf /tmp/kbt; timeout 100 $B/tools/kbsynth/kbsynth import .kb/level2/12_Gemm_Multiply_LeakyReLU.py -o /tmp/kbt \
          --id kernelbench/level2/12_Gemm_Multiply_LeakyReLU --compiled none >>"$OUT/kb-import.log" 2>&1
        echo "import without the package rc=$?"; bench_args="--no-aoti-build"
      fi
      KB_BENCH_ARGS="${KB_BENCH_ARGS:-$bench_args}" \
      KBPROF=$B/tools/kbprof/kbprof KBCHECK=$B/tools/kbcheck/kbcheck timeout 150 bash scripts/bench/iteration.sh \
        /tmp/kbt/kernelbench/level2/12_Gemm_Multiply_LeakyReLU testdata/solutions-bench/gemm_mul_leakyrelu 5 \
        >"$OUT/bench-l2-12.log" 2>&1
      echo "bench rc=$?"; tail -12 "$OUT/bench-l2-12.log" ;;
    python)
      [ -e $B/lib/pymodel/libkb_pymodel.so ] || { echo "python: no adapter in this build (python3-embed missing)"; continue; }
      KB_SOURCE_ROOT=$S timeout "${PYTHON_TIMEOUT:-540}" bash tests/tools/python_format_test.sh $B/tools/kbcheck/kbcheck $S cuda \
        >"$OUT/python-format.log" 2>&1
      echo "python rc=$?"; tail -16 "$OUT/python-format.log" ;;
    pybaseline)
      export KB_BASELINE_CACHE=/tmp/pyb-bl
      summary() { jq -r --arg n "$1" '[$n, .status, .eager_baseline, (.timings.eager.median_ms // "-"),
        (.compile_baseline // "none"), (.timings.compile.median_ms // "-"), (.speedup_vs_compile // "-"),
        ((.compile_baseline_reason // "") | .[0:150]), (.python_baselines.compile_seconds // "-")] | @tsv' "$2" 2>/dev/null \
        || echo "$1: no report"; }
      for t in level3/39_GRU level2/12_Gemm_Multiply_LeakyReLU; do
        n=$(basename $t); T=/tmp/pyb/kernelbench/$t
        timeout 420 $B/tools/kbsynth/kbsynth import .kb/$t.py -o /tmp/pyb --id kernelbench/$t --compiled cuda \
          >"$OUT/pyb-$n-import.log" 2>&1
        echo "import $n rc=$?"; jq -c '.compile_baseline' $T/task.json 2>/dev/null | cut -c1-300
        cp $T/compiled/*.failed.json "$OUT/pyb-$n-failed.json" 2>/dev/null
        timeout 300 $B/tools/kbprof/kbprof $T -q --json "$OUT/pyb-$n-baselines.json"; summary "$n baselines" "$OUT/pyb-$n-baselines.json"
        # A torch-only ModelNew: the reference itself, so eager and compile are both Python's.
        mkdir -p .kb/pyb/$n && sed -e 's/class Model(/class ModelNew(/' -e 's/super(Model, self)/super(ModelNew, self)/' \
          .kb/$t.py >.kb/pyb/$n/model_new.py
        timeout 300 $B/tools/kbprof/kbprof $T .kb/pyb/$n --policy kernelbench -q --json "$OUT/pyb-$n-python.json"; summary "$n python" "$OUT/pyb-$n-python.json"
      done
      T=/tmp/pyb/kernelbench/level2/12_Gemm_Multiply_LeakyReLU; S2=testdata/solutions-kernelbench/level2/12_Gemm_Multiply_LeakyReLU
      timeout 200 $B/tools/kbprof/kbprof $T $S2 -q --json "$OUT/pyb-12-native.json"; summary "12 native" "$OUT/pyb-12-native.json"
      timeout 300 $B/tools/kbprof/kbprof $T $S2 --compile-baseline python -q --json "$OUT/pyb-12-native-python.json"
      summary "12 native python_compile" "$OUT/pyb-12-native-python.json" ;;
    kbadv)
      timeout 120 $B/tools/kbsynth/kbsynth import .kb/level1/1_Square_matrix_multiplication_.py -o /tmp/kba \
        --id kernelbench/level1/1_Square_matrix_multiplication_ --compiled none >"$OUT/kbadv-import.log" 2>&1
      echo "import rc=$?"
      T=/tmp/kba/kernelbench/level1/1_Square_matrix_multiplication_
      for d in .kb/kbadv/*/; do
        n=$(basename "$d")
        timeout 300 $B/tools/kbcheck/kbcheck "$T" "$d" --policy kernelbench --device cuda -q --json "$OUT/kbadv-$n.check.json"
        st=$(jq -r .status "$OUT/kbadv-$n.check.json" 2>/dev/null)
        if [ "$st" = ok ]; then
          timeout 300 $B/tools/kbprof/kbprof "$T" "$d" --policy kernelbench -q --json "$OUT/kbadv-$n.prof.json"
          st="ok, then kbprof $(jq -r .status "$OUT/kbadv-$n.prof.json" 2>/dev/null)"
        fi
        echo "$n: $st"
      done ;;
    paperws)
      # The CUDA Agent paper's released workspace (agent_workdir/ of BytedTsinghua-SIA/CUDA-Agent,
      # copied to .kb/paper-workdir, never the tree: the repository states no licence) on its own
      # model.py, under the paper policy: kbcheck, then kbprof.
      [ -f .kb/paper-workdir/model.py ] || { echo "paperws: no .kb/paper-workdir"; continue; }
      timeout 120 $B/tools/kbsynth/kbsynth import .kb/paper-workdir/model.py -o /tmp/kbpw --id paper/axpby \
        --compiled none >"$OUT/paperws-import.log" 2>&1
      echo "import rc=$?"
      T=/tmp/kbpw/paper/axpby
      timeout 300 $B/tools/kbcheck/kbcheck "$T" .kb/paper-workdir --device cuda -q --json "$OUT/paperws.check.json"
      st=$(jq -r .status "$OUT/paperws.check.json" 2>/dev/null)
      if [ "$st" = ok ]; then
        timeout 300 $B/tools/kbprof/kbprof "$T" .kb/paper-workdir -q --json "$OUT/paperws.prof.json"
        st="ok, then kbprof $(jq -r '[.status, .speedup_vs_eager] | @tsv' "$OUT/paperws.prof.json" 2>/dev/null)"
      fi
      echo "paper workspace: $st $(jq -r '.message // ""' "$OUT/paperws.check.json" 2>/dev/null | head -c 300)" ;;
    audit)
      [ -e $B/lib/pymodel/libkb_pymodel.so ] || echo "audit: no Python adapter in this build: the solutions will end infra_error at build"
      timeout "${AUDIT_TIMEOUT:-540}" bash experiments/audit/run.sh --bin $B --device cuda --work /tmp/audit \
        --out "$OUT/audit-results" -j "${AUDIT_JOBS:-8}" --deadline "${AUDIT_DEADLINE:-380}" --import-timeout 150 \
        --prof-timeout 150 --check-timeout 240 >"$OUT/audit.log" 2>&1
      echo "audit rc=$?"
      tar czf "$OUT/audit-reports.tgz" -C /tmp/audit reports import.log import.jsonl 2>/dev/null
      grep -v "^  " "$OUT/audit.log" | tail -12; grep "^Status counts" "$OUT/audit-results.md" ;;
    kbharness)
      # KernelBench's own harness on the audit's solutions (experiments/audit/kb_harness.py),
      # its source from .kb/kernelbench-src (a git archive of KernelBench, never the tree).
      # An earlier call's verdicts (.kb/kb-harness.json: its $OUT file, copied back) are kept: the rest run.
      resume=(); [ -f .kb/kb-harness.json ] && cp .kb/kb-harness.json "$OUT/kb-harness.json" && resume=(--resume)
      timeout "${KBH_TIMEOUT:-540}" python3 -u experiments/audit/kb_harness.py --src .kb/kernelbench-src \
        --claims .kb/audit/claims.json --audit .kb/audit --kb .kb/kb-tasks --out "$OUT/kb-harness.json" "${resume[@]}" \
        --work /tmp/kbh --timeout 120 --deadline "${KBH_DEADLINE:-480}" >"$OUT/kb-harness.log" 2>&1
      echo "kbharness rc=$?"; tail -8 "$OUT/kb-harness.log"
      jq -r '.solutions | to_entries[] | "\(.key) \(.value.status) \(.value.speedup // "-")"' "$OUT/kb-harness.json" 2>/dev/null | tail -45 ;;
    compile)
      # COMPILE_LEVEL may name several levels ("3 2 1"): one after another, all inside
      # COMPILE_TIMEOUT seconds together.
      end=$(( $(date +%s) + ${COMPILE_TIMEOUT:-500} ))
      # Captures get 420 s each: level1/87_conv_pointwise_2D's took over 240 s beside
      # 8 builds (an H100, 2026-12-06).
      # COMPILE_SRC: another folder of level<N>/ problem files (default .kb/kernelbench-all),
      # e.g. only the tasks an earlier census left without a figure.
      K=${COMPILE_SRC:-.kb/kernelbench-all}
      for L in ${COMPILE_LEVEL:-3}; do
      C=/tmp/kbc$L; left=$(( end - $(date +%s) ))
      [ -d $K/level$L ] || { echo "compile: no $K/level$L"; continue; }
      [ $left -gt 5 ] || { echo "compile level$L: no time left"; continue; }
      # A level cut short by the timeout on this (warm) machine goes on where it stopped.
      resume=(); [ -d $C ] && resume=(--skip-existing)
      # The system compiler for AOTInductor's builds: under the GPU machine's /opt/gcc g++
      # baseline.py died by SIGSEGV on every build it started (2026-12-06).
      CXX=/usr/bin/c++ CC=/usr/bin/cc timeout $left $B/tools/kbsynth/kbsynth import $K/level$L -o $C "${resume[@]}" -j "${CAPTURE_JOBS:-8}" \
        --compiled cuda --baseline-jobs "${COMPILE_JOBS:-8}" --timeout 420 >>"$OUT/compile-level$L.log" 2>&1
      echo "compile level$L rc=$?"; tail -4 "$OUT/compile-level$L.log"
      cp $C/import-report.json "$OUT/compile-level$L-report.json" 2>/dev/null
      find $C -name task.json | sort | while read -r f; do
        # No compile_baseline in task.json: the import report's line for it says why (baseline.py
        # died on it), or there is none: the import was stopped before its compile step.
        jq -r --slurpfile rep $C/import-report.json 'if .compile_baseline == null then
            (.id as $id | ([$rep[0].tasks[]? | select(.id == $id) | .compiled | select(.status == "failed")] | .[0]) as $c |
             if $c then [.id, "none", ("kbsynth: " + $c.reason + ": " + ($c.message // "") | .[0:300])]
             else [.id, "unfinished", "the import was stopped before its compile step"] end)
          else [.id, ((.compile_baseline // {}) | to_entries | .[0].value // {} |
          (.baseline // "none"), ((.reason // "") | gsub("[\t\n]"; " ") | .[0:300]))] end | @tsv' "$f"
      done >"$OUT/compile-level$L.tsv"
      echo "tasks $(wc -l <"$OUT/compile-level$L.tsv"):"; cut -f2 "$OUT/compile-level$L.tsv" | sort | uniq -c
      done
      # A call returns at most 8 files: the TSVs as they are, logs and reports in one archive.
      (cd "$OUT" && ls compile-level*.log compile-level*-report.json >/dev/null 2>&1 &&
        tar czf compile-logs.tgz compile-level*.log compile-level*-report.json &&
        rm -f compile-level*.log compile-level*-report.json) ;;
    serve)
      (time bash scripts/gpu/build.sh $B tools/kbserve/kbserve) >"$OUT/serve-build.log" 2>&1 || { tail -30 "$OUT/serve-build.log"; exit 1; }
      tail -3 "$OUT/serve-build.log"
      timeout 200 $B/tools/kbsynth/kbsynth import .kb/level2/*.py -o /tmp/kbs --compiled none >"$OUT/serve-import.log" 2>&1
      echo "import rc=$?"; tail -2 "$OUT/serve-import.log"
      T=$(dirname "$(dirname "$(find /tmp/kbs -name task.json | head -1)")")  # the folder of task folders
      rm -rf /tmp/serve-reports  # (a second serve in one call kept the first's reports beside its own)
      PYTHONPATH=$S/.carry/py:$S/python timeout "${SERVE_TIMEOUT:-300}" python3 -u scripts/bench/serve_load.py --tasks "$T" \
        --solutions testdata/solutions-kernelbench/level2 --device cuda --clients "${CLIENTS:-32}" --rounds "${ROUNDS:-4}" \
        --sequential "${SEQUENTIAL:-1}" --kbserve $B/tools/kbserve/kbserve --kbprof $B/tools/kbprof/kbprof --kbcheck $B/tools/kbcheck/kbcheck \
        --keep-reports /tmp/serve-reports ${SERVE_ARGS:+--serve-args "$SERVE_ARGS"} >"$OUT/serve-bench.log" 2>&1
      echo "serve rc=$?"; tail -15 "$OUT/serve-bench.log"
      tar czf "$OUT/serve-reports.tgz" -C /tmp serve-reports 2>/dev/null ;;
    servegpu)
      # tests/gpu/serve_gpu_test.sh alone, SERVE_GPU_RUNS times (default 2), without the whole
      # build: kbserve and the worker only; every run's work folder (evaluations' JSON, kbserve's logs)
      # into $OUT/servegpu-N.tgz.
      (time bash scripts/gpu/build.sh $B tools/kbserve/kbserve tools/kbcheck/kbcheck-worker tools/kbprof/kbprof) >"$OUT/servegpu-build.log" 2>&1 \
        || { tail -30 "$OUT/servegpu-build.log"; exit 1; }
      for n in $(seq 1 "${SERVE_GPU_RUNS:-2}"); do
        (cd $B && KB_SOURCE_ROOT=$S timeout 200 bash $S/tests/gpu/serve_gpu_test.sh tools/kbserve/kbserve true /tmp/sgw) \
          >"$OUT/servegpu-$n.log" 2>&1
        echo "servegpu run $n rc=$?"; grep -E "FAIL|^shared:|chose" "$OUT/servegpu-$n.log" | cut -c1-400
        tar czf "$OUT/servegpu-$n.tgz" --exclude=cache --exclude='*.so' -C /tmp sgw 2>/dev/null
      done ;;
    late)
      # kbprof --late-start (the reference started after the candidate) on testdata's linear_relu with
      # ok_naive, LATE_RUNS times (default 4), kbprof and the worker only: serve_gpu's late-start
      # case ended infra_error once (reference worker exit 70, a CUDA error; H100, 2026-12-07).
      (time bash scripts/gpu/build.sh $B tools/kbprof/kbprof tools/kbcheck/kbcheck-worker) >"$OUT/late-build.log" 2>&1 \
        || { tail -30 "$OUT/late-build.log"; exit 1; }
      tail -3 "$OUT/late-build.log"
      for n in $(seq 1 "${LATE_RUNS:-4}"); do
        # The first run builds the solution and measures the baselines (cold cache): 30 s
        # stopped it on 2026-12-07.
        timeout $([ "$n" = 1 ] && echo 240 || echo 30) $B/tools/kbprof/kbprof --late-start testdata/tasks/linear_relu testdata/solutions-gpu/ok_naive \
          --cache-dir /tmp/late-cache -q --json "$OUT/late-$n.json" 2>"$OUT/late-$n.err"
        echo "late $n rc=$? $(jq -r '[.status, .message, (.reference_retry_after // "no retry")] | @tsv' "$OUT/late-$n.json" 2>&1 | cut -c1-400)"
      done ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
