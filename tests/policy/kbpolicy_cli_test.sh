#!/usr/bin/env bash
# kbpolicy on the fixtures: each subcommand runs and its output has the
# documented fields; bad input exits 2 (usage) or 1 (bad data) with one line;
# the chat template is the checkpoint's (ChatML, Llama 3) or refused.
set -uo pipefail
KBPOLICY="$1"
DATA="$2/testdata/policy"
source "$2/tests/support/cli_checks.sh"

check "encode --text" bash -c "'$KBPOLICY' encode --tokenizer '$DATA/qwen2-tiny' --text 'hello <|im_end|>' | jq -e '.ids | length > 1'"
check "encode/decode round trip" bash -c "ids=\$('$KBPOLICY' encode --tokenizer '$DATA/tokenizers/qwen.json' --file '$DATA/corpus/kernel.cu' | jq -c .ids) && '$KBPOLICY' decode --tokenizer '$DATA/tokenizers/qwen.json' --ids \"\$ids\" > '$TMP/dec' && diff <(cat '$DATA/corpus/kernel.cu') <(head -c -1 '$TMP/dec')"
jq '.[4].messages' "$DATA/chat_expected.json" > "$TMP/messages.json"
jq '.[4].tools' "$DATA/chat_expected.json" > "$TMP/tools.json"
check "chat: text, ids and mask as the reference" bash -c "'$KBPOLICY' chat --tokenizer '$DATA/qwen2-tiny' --messages '$TMP/messages.json' --tools '$TMP/tools.json' > '$TMP/chat.json' && jq -e --slurpfile ref '$DATA/chat_expected.json' '.text == \$ref[0][4].text and .ids == \$ref[0][4].ids and (.loss_mask | add) > 0' '$TMP/chat.json'"
jq -c '[.cases[].prompt]' "$DATA/qwen2-tiny/greedy.json" > "$TMP/prompts.json"
check "generate greedy = transformers" bash -c "'$KBPOLICY' generate --model '$DATA/qwen2-tiny' --prompts '$TMP/prompts.json' --temperature 0 --max-new-tokens 64 --dtype float32 > '$TMP/gen.jsonl' && jq -s -e --slurpfile ref '$DATA/qwen2-tiny/greedy.json' '[.[].token_ids] == [\$ref[0].cases[].tokens] and all(.[]; .finish_reason == \"length\" and (.logprobs | length) == 64)' '$TMP/gen.jsonl'"
echo '{"conversations": [[{"role": "user", "content": "hi"}]], "tools": null}' > "$TMP/chat_in.json"
check "generate --chat" bash -c "'$KBPOLICY' generate --model '$DATA/qwen2-tiny' --chat '$TMP/chat_in.json' --max-new-tokens 8 --seed 1 | jq -e '.message.role == \"assistant\" and (.token_ids | length) > 0'"
check "save then logits" bash -c "'$KBPOLICY' save --model '$DATA/llama-tiny' --out '$TMP/saved' --dtype float32 && jq -e '.dtype == \"float32\"' '$TMP/saved/config.json' && '$KBPOLICY' logits --model '$TMP/saved' --inputs '$DATA/llama-tiny/expected.safetensors' --out '$TMP/logits.safetensors' && test -s '$TMP/logits.safetensors'"
check "bench --config (random weights)" bash -c "'$KBPOLICY' bench --config '$DATA/qwen2-tiny/config.json' --batch 2 --prompt-len 8 --new-tokens 4 --repeat 1 | jq -e '.decode_tokens_per_s > 0 and .prefill_tokens_per_s > 0'"

expect_rc 2 "missing model directory" "$KBPOLICY" generate --model "$TMP/nope" --prompts "$TMP/prompts.json"
expect_rc 2 "unknown dtype" "$KBPOLICY" logits --model "$DATA/qwen2-tiny" --inputs x --out y --dtype int4
expect_rc 2 "no CUDA here or bad device" "$KBPOLICY" bench --config "$DATA/qwen2-tiny/config.json" --device tpu
mkdir -p "$TMP/bad" && jq '.architectures = ["GPTNeoXForCausalLM"]' "$DATA/qwen2-tiny/config.json" > "$TMP/bad/config.json"
expect_rc 1 "unsupported architecture" "$KBPOLICY" save --model "$TMP/bad" --out "$TMP/bad2"

# --- Issue 18: bad values are usage errors (exit 2, one line), before any work.
TOK="$DATA/tokenizers/qwen.json"
expect_rc 2 "decode: an id beyond the vocabulary" "$KBPOLICY" decode --tokenizer "$TOK" --ids '[999999]'
grep -q "outside the vocabulary" "$TMP/err" || { echo "FAIL message: $(cat "$TMP/err")"; fail=1; }
expect_rc 2 "decode: a negative id" "$KBPOLICY" decode --tokenizer "$TOK" --ids '[-5]'
expect_rc 2 "decode: ids that are not JSON" "$KBPOLICY" decode --tokenizer "$TOK" --ids '[1, 2'
grep -q "internal error" "$TMP/err" && { echo "FAIL a typo reported as an internal error"; fail=1; }
expect_rc 2 "decode: ids that are not integers" "$KBPOLICY" decode --tokenizer "$TOK" --ids '["a"]'
expect_rc 2 "generate --max-new-tokens -1" "$KBPOLICY" generate --model "$DATA/qwen2-tiny" --prompts "$TMP/prompts.json" --max-new-tokens -1
expect_rc 2 "generate --max-new-tokens 0" "$KBPOLICY" generate --model "$DATA/qwen2-tiny" --prompts "$TMP/prompts.json" --max-new-tokens 0
expect_rc 2 "generate --top-p 2" "$KBPOLICY" generate --model "$DATA/qwen2-tiny" --prompts "$TMP/prompts.json" --top-p 2
expect_rc 2 "an unknown flag" "$KBPOLICY" generate --model "$DATA/qwen2-tiny" --frobnicate
grep -q "unknown flag --frobnicate" "$TMP/err" || { echo "FAIL unknown flag message: $(cat "$TMP/err")"; fail=1; }
check "--version" bash -c "'$KBPOLICY' --version | grep -q '^kbpolicy '"
echo "a file" > "$TMP/afile"
expect_rc 2 "save into an unwritable --out" "$KBPOLICY" save --model "$DATA/llama-tiny" --out "$TMP/afile/saved"
expect_rc 2 "generate into an unwritable --out" "$KBPOLICY" generate --model "$DATA/qwen2-tiny" --prompts "$TMP/prompts.json" --out "$TMP/afile/gen.jsonl"
expect_rc 2 "logits into an unwritable --out" "$KBPOLICY" logits --model "$DATA/llama-tiny" --inputs "$DATA/llama-tiny/expected.safetensors" --out "$TMP/afile/l.safetensors"

# --- The chat template is the checkpoint's: Llama renders as Llama 3, and a
# checkpoint without a template is refused, never rendered as ChatML.
echo '[{"role": "user", "content": "hi"}]' > "$TMP/hi.json"
expect_rc 2 "chat: a checkpoint without a template" "$KBPOLICY" chat --tokenizer "$DATA/llama-tiny" --messages "$TMP/hi.json"
grep -q "no chat template" "$TMP/err" || { echo "FAIL message: $(cat "$TMP/err")"; fail=1; }
mkdir -p "$TMP/llama" && cp "$DATA/llama-tiny/"* "$TMP/llama/"
jq --rawfile t "$2/tests/policy/chat_templates/llama3.1.jinja" '.chat_template = $t' "$DATA/llama-tiny/tokenizer_config.json" > "$TMP/llama/tokenizer_config.json"
check "chat: Llama 3.1's template from tokenizer_config.json" bash -c "'$KBPOLICY' chat --tokenizer '$TMP/llama' --messages '$TMP/hi.json' --generation-prompt \
  | jq -e '.template == \"llama3\" and (.text | startswith(\"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\")) and (.text | contains(\"<|im_start|>\") | not) and (.text | endswith(\"<|start_header_id|>assistant<|end_header_id|>\n\n\"))'"
check "chat: Qwen2's checkpoint stays ChatML" bash -c "'$KBPOLICY' chat --tokenizer '$DATA/qwen2-tiny' --messages '$TMP/hi.json' | jq -e '.template == \"chatml\"'"
check "generate --chat with the Llama checkpoint" bash -c "'$KBPOLICY' generate --model '$TMP/llama' --chat '$TMP/chat_in.json' --max-new-tokens 4 --seed 1 | jq -e '(.token_ids | length) > 0'"
expect_rc 2 "generate --chat with a Llama checkpoint without a template" "$KBPOLICY" generate --model "$DATA/llama-tiny" --chat "$TMP/chat_in.json" --max-new-tokens 4

# --- SIGINT during generate: exit 130, one line, nothing written.
"$KBPOLICY" generate --model "$DATA/qwen2-tiny" --prompts "$TMP/prompts.json" --max-new-tokens 100000 --out "$TMP/long.jsonl" \
  > /dev/null 2> "$TMP/long.err" &
pid=$!
sleep 3
kill -INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" -eq 130 ] && [ "$(wc -l < "$TMP/long.err")" -eq 1 ] && grep -q "^kbpolicy: interrupted" "$TMP/long.err" && [ ! -e "$TMP/long.jsonl" ]; then
  echo "ok   SIGINT during generate (exit 130: $(cat "$TMP/long.err"))"
else
  echo "FAIL SIGINT during generate: exit $rc, want 130, one line, no output file"; cat "$TMP/long.err"; fail=1
fi
[ "$fail" -eq 0 ] && echo "kbpolicy CLI: all checks passed"
exit "$fail"
