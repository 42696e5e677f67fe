#!/usr/bin/env bash
# Renders the HTML run report (and a comparison) of the 250-result fixture in
# headless Chromium: takes a screenshot, fails on any console message (an SVG
# attribute error, a script error), and checks the rendered page's summary
# table against the hand-computed values (tests/reward/aggregate_test.cpp
# derives each one). Skips (exit 77) when Chromium is not installed.
# Usage: html_screenshot_test.sh path/to/kbreward   (KB_SOURCE_ROOT set;
# KB_TEST_OUT: where the pages and screenshots stay for a person to look at)
set -uo pipefail
KB="$1"
ROOT="${KB_SOURCE_ROOT:?KB_SOURCE_ROOT must be set}"
D="$ROOT/testdata/reward"

CHROME=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then CHROME="$(command -v "$c")"; break; fi
done
if [ -z "$CHROME" ]; then
  echo "SKIP: no chromium (Debian package 'chromium'; scripts/setup.sh installs it)"
  exit 77
fi

OUT="${KB_TEST_OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
PROFILE="$(mktemp -d)"  # a private profile: other builders may run Chromium too
trap 'rm -rf "$PROFILE"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# chrome PAGE LOG ARGS...: one headless run; its log (with console messages) in LOG.
chrome() {
  local page="$1" log="$2"
  shift 2
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$PROFILE" --enable-logging=stderr --v=0 "$@" "file://$page" 2>"$log"
}

# Console messages come out as ":CONSOLE" lines; a page with a deliberate
# error proves that this test would see one.
cat >"$OUT/canary.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head>
<body><svg width="10" height="10"><rect width="-1" height="5"/></svg></body></html>
EOF
chrome "$OUT/canary.html" "$OUT/canary.log" --dump-dom >/dev/null
if ! grep -q ":CONSOLE" "$OUT/canary.log"; then
  echo "FAIL: Chromium's console log is not captured (canary page's error not seen); cannot check the report"
  exit 1
fi

"$KB" report -o "$OUT/report.html" --title "KernelBench fixture, 250 tasks" "$D/run250_a.jsonl" ||
  fail "kbreward report failed"
"$KB" report -o "$OUT/compare.html" --compare "$D/run250_a.jsonl" "$D/run250_b.jsonl" ||
  fail "kbreward report --compare failed"

for page in report compare; do
  rm -f "$OUT/$page.png"
  chrome "$OUT/$page.html" "$OUT/$page.shot.log" --window-size=1100,2300 --screenshot="$OUT/$page.png" \
    >/dev/null
  if [ ! -s "$OUT/$page.png" ] || [ "$(head -c 4 "$OUT/$page.png" | od -An -c | tr -d ' ')" != "211PNG" ]; then
    fail "$page: no screenshot ($(tail -3 "$OUT/$page.shot.log"))"
  fi
  chrome "$OUT/$page.html" "$OUT/$page.dom.log" --dump-dom >"$OUT/$page.dom.html"
  for log in "$OUT/$page.shot.log" "$OUT/$page.dom.log"; do
    if grep -q ":CONSOLE" "$log"; then
      fail "$page: console messages:"
      grep ":CONSOLE" "$log" | head -5
    fi
  done
done

# The rendered summary table, one row a line, cells joined by '|'.
rows="$(sed -n '/<table class="summary">/,/<\/table>/p' "$OUT/report.dom.html" | grep '<tr' |
  sed -e 's/<\/t[dh]><t[dh][^>]*>/|/g' -e 's/<[^>]*>//g' -e 's/&nbsp;/ /g' -e 's/&gt;/>/g')"
expected="group|tasks|excluded|pass|> eager|> compile|geomean eager|geomean compile|fast_0|fast_1|fast_1.5|fast_2|mean reward
level 1|100|1|90.9%|60.6%|30.3%|1.30x|0.92x|90.9%|60.6%|30.3%|30.3%|1.73
level 2|100|2|91.8%|76.5%|76.5%|2.01x|1.50x|91.8%|76.5%|76.5%|45.9%|2.37
level 3|50|1|85.7%|55.1%|55.1%|1.07x|0.88x|85.7%|55.1%|0.0%|0.0%|1.82
all|250|4|90.2%|65.9%|53.7%|1.49x|1.12x|90.2%|65.9%|42.7%|30.5%|2.00"
if [ "$rows" != "$expected" ]; then
  fail "summary table as rendered differs from the hand-computed one"
  diff <(echo "$expected") <(echo "$rows")
fi
n_svg="$(grep -o '<svg' "$OUT/report.dom.html" | wc -l)"
[ "$n_svg" -eq 6 ] || fail "report: $n_svg charts rendered, expected 6"
grep -q "fixed <b>4</b>" "$OUT/compare.dom.html" || fail "compare: 'fixed 4' not on the page"
grep -q "<td>kb_l2_011</td><td>level 2</td><td>broke</td>" "$OUT/compare.dom.html" ||
  fail "compare: kb_l2_011 not listed as broke"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s); pages and logs in $OUT"
  exit 1
fi
echo "HTML report renders without console messages; screenshots: $OUT/report.png $OUT/compare.png"
