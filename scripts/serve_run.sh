#!/usr/bin/env bash
# Evaluates a folder of solutions through a running kbserve and writes what
# kbreward reads: each evaluation's kbcheck report (and kbprof report, when
# it was profiled), one JSON object per line.
#
#   scripts/serve_run.sh URL TASKS SOLUTIONS OUT.jsonl [DEVICE] [STAGES]
#
# SOLUTIONS holds DIR/<task folder>/ (forward.cpp, kernels/) or variants
# DIR/<task folder>/<v>/ as kbrollout --replay takes them; <task folder> is
# the folder under TASKS whose task.json names the task. Submissions go
# together (the server schedules them), answers are awaited in order; a 429
# or 503 is retried after its Retry-After. Exit 1 when an evaluation could
# not be made (the line says which), 2 for bad arguments.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: serve_run.sh URL TASKS SOLUTIONS OUT.jsonl [DEVICE] [STAGES]" >&2; exit 2; }
URL="${1%/}"; TASKS="$2"; SOLUTIONS="$3"; OUT="$4"; DEVICE="${5:-cpu}"
STAGES="${6:-$([ "$DEVICE" = cuda ] && echo static,build,verify,profile || echo static,build,verify)}"
AUTH=()
[ -n "${KBSERVE_TOKEN:-}" ] && AUTH=(-H "Authorization: Bearer $KBSERVE_TOKEN")

# POST or GET with retries on 429 / 503; prints the body.
call() {
  local method="$1" path="$2" body="${3:-}" tries=0
  while :; do
    local hdr; hdr=$(mktemp)
    local code
    if [ "$method" = POST ]; then
      code=$(curl -sS -o "$hdr.body" -D "$hdr" -w '%{http_code}' "${AUTH[@]}" -H 'Content-Type: application/json' \
        --data-binary @"$body" "$URL$path")
    else
      code=$(curl -sS -o "$hdr.body" -D "$hdr" -w '%{http_code}' "${AUTH[@]}" "$URL$path")
    fi
    if [ "$code" = 429 ] || [ "$code" = 503 ]; then
      local after; after=$(grep -i '^retry-after:' "$hdr" | tr -dc 0-9); rm -f "$hdr" "$hdr.body"
      tries=$((tries + 1)); [ $tries -le 60 ] || { echo "serve_run: $path: still $code after 60 tries" >&2; return 1; }
      sleep "${after:-5}"; continue
    fi
    cat "$hdr.body"; rm -f "$hdr" "$hdr.body"
    [ "${code:0:1}" = 2 ] || { echo "serve_run: $path: HTTP $code" >&2; return 1; }
    return 0
  done
}

stages_json=$(jq -cn --arg s "$STAGES" '$s | split(",")')
ids=(); names=()
for dir in $(find -L "$SOLUTIONS" -name forward.cpp -printf '%h\n' | sort); do
  rel="${dir#"$SOLUTIONS"/}"; folder="${rel%%/*}"
  [ -f "$TASKS/$folder/task.json" ] || { echo "serve_run: $rel: no task folder $TASKS/$folder" >&2; exit 2; }
  task=$(jq -r .id "$TASKS/$folder/task.json")
  req=$(mktemp)
  (cd "$dir" && find . -type f \( -name '*.cpp' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' -o -name '*.hpp' \) -printf '%P\n' |
    jq -R . | jq -s . ) > "$req.names"
  jq -n --arg task "$task" --arg device "$DEVICE" --argjson stages "$stages_json" \
    '{task: $task, device: $device, stages: $stages, files: {}}' > "$req"
  for f in $(jq -r '.[]' "$req.names"); do
    jq --arg f "$f" --rawfile c "$dir/$f" '.files[$f] = $c' "$req" > "$req.tmp" && mv "$req.tmp" "$req"
  done
  # The key names this content: a resubmission after an interruption finds
  # the same evaluation; an edited solution is a new one.
  key="serve-run:$rel:$(sha256sum < "$req" | cut -c1-16)"
  jq --arg key "$key" '.idempotency_key = $key' "$req" > "$req.tmp" && mv "$req.tmp" "$req"
  id=$(call POST /v1/evaluations "$req" | jq -r .id)
  rm -f "$req" "$req.names"
  ids+=("$id"); names+=("$rel")
  echo "serve_run: submitted $rel as $id" >&2
done
: > "$OUT.part"
failed=0
for i in "${!ids[@]}"; do
  ev=$(call GET "/v1/evaluations/${ids[$i]}?wait=true&timeout_s=3600") || { failed=1; continue; }
  state=$(jq -r .state <<<"$ev")
  if [ "$state" != done ]; then echo "serve_run: ${names[$i]}: $state" >&2; failed=1; continue; fi
  echo "serve_run: ${names[$i]}: $(jq -r .status <<<"$ev")" >&2
  jq -c .report <<<"$ev" >> "$OUT.part"
  jq -e '.profile != null' <<<"$ev" >/dev/null && jq -c .profile <<<"$ev" >> "$OUT.part"
done
mv "$OUT.part" "$OUT"
exit $failed
