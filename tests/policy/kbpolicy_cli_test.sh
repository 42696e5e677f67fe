#!/usr/bin/env bash
# kbpolicy on the fixtures: each subcommand runs and its output has the
# documented fields; bad input exits 2 (usage) or 1 (bad data) with one line.
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
[ "$fail" -eq 0 ] && echo "kbpolicy CLI: all checks passed"
exit "$fail"
