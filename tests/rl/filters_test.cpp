// RFT filters on hand-made trajectories, and episodes from trajectories.
#include <gtest/gtest.h>

#include <cstdlib>

#include "llm/chat_template.h"
#include "llm/tokenizer.h"
#include "rl/episode.h"
#include "rl/filters.h"
#include "toy/task.h"

using namespace kb;
using namespace kb::rl;
using namespace kb::toy;  // the toy family's trajectories as fixtures

namespace {

Json call(const std::string& name, const std::string& args) {
  return {{"id", "c"}, {"name", name}, {"arguments", args}};
}

Json turn(std::vector<Json> calls, Json observations = Json::array(), std::string finish = "tool_calls") {
  return {{"turn", 0}, {"prompt_messages", 2},
          {"response", {{"content", "thinking"}, {"tool_calls", calls}, {"finish_reason", finish}}},
          {"observations", observations}};
}

Json trajectory(double reward, std::vector<Json> turns) {
  Json t = {{"rollout_id", "t#0"}, {"task_id", "t"}, {"messages", Json::array()}, {"turns", turns}};
  t["reward"] = {{"value", reward}, {"correct", reward > 0}};
  return t;
}

}  // namespace

TEST(Filters, CleanSuccessIsKept) {
  Json t = trajectory(2, {turn({call("compile", "{}")}), turn({call("finish", "{\"summary\":\"x\"}")})});
  EXPECT_TRUE(rejectionReasons(t, {}).empty());
}

TEST(Filters, EachReason) {
  FilterOptions o;
  EXPECT_EQ(rejectionReasons(trajectory(-1, {turn({call("compile", "{}")})}), o),
            std::vector<std::string>{"reward_not_positive"});
  Json none = trajectory(1, {turn({call("compile", "{}")})});
  none["reward"]["value"] = nullptr;
  EXPECT_EQ(rejectionReasons(none, o), std::vector<std::string>{"no_reward"});
  EXPECT_EQ(rejectionReasons(trajectory(1, {turn({call("edit_file", "{not json")})}), o),
            std::vector<std::string>{"invalid_tool_call"});
  Json unknown = trajectory(1, {turn({call("launch", "{}")}, Json::array({{{"error_kind", "unknown_tool"}}}))});
  EXPECT_EQ(rejectionReasons(unknown, o), std::vector<std::string>{"invalid_tool_call"});
  Json loop = trajectory(1, {turn({call("compile", "{}")}), turn({call("compile", "{}")}), turn({call("compile", "{}")})});
  EXPECT_EQ(rejectionReasons(loop, o), std::vector<std::string>{"loop"});
  Json two = trajectory(1, {turn({call("compile", "{}")}), turn({call("compile", "{}")})});
  EXPECT_TRUE(rejectionReasons(two, o).empty());  // 2 < loop_repeats
  Json cut = trajectory(1, {turn({call("compile", "{}")}, Json::array(), "length")});
  EXPECT_EQ(rejectionReasons(cut, o), std::vector<std::string>{"malformed_turn"});
  Json nudged = trajectory(1, {turn({})});
  nudged["turns"][0]["nudge"] = "call a tool";
  EXPECT_EQ(rejectionReasons(nudged, o), std::vector<std::string>{"malformed_turn"});
  Json failed = trajectory(1, {{{"turn", 0}, {"policy_error", "HTTP 500"}}});
  EXPECT_EQ(rejectionReasons(failed, o), std::vector<std::string>{"malformed_turn"});
}

TEST(Filters, SwitchesAndCounts) {
  FilterOptions o;
  o.reject_loops = false;
  Json loop = trajectory(-1, {turn({call("compile", "{}")}), turn({call("compile", "{}")}), turn({call("compile", "{}")})});
  EXPECT_EQ(rejectionReasons(loop, o), std::vector<std::string>{"reward_not_positive"});
  FilterSummary s;
  std::vector<Json> all = {trajectory(1, {turn({call("a", "{}")})}), loop,
                           trajectory(-1, {turn({call("a", "{bad")})})};
  auto kept = filterTrajectories(all, FilterOptions{}, &s);
  EXPECT_EQ(kept.size(), 1u);
  EXPECT_EQ(s.seen, 3u);
  EXPECT_EQ(s.rejected, 2u);
  EXPECT_EQ(s.reasons["reward_not_positive"], 2u);
  EXPECT_EQ(s.reasons["loop"], 1u);
  EXPECT_EQ(s.reasons["invalid_tool_call"], 1u);
  EXPECT_EQ(s.toJson()["reasons"]["malformed_turn"], 0);
}

class EpisodeTest : public ::testing::Test {
 protected:
  llm::Tokenizer tok = llm::Tokenizer::fromFile(std::string(std::getenv("KB_SOURCE_ROOT")) +
                                                      "/testdata/policy/qwen2-tiny/tokenizer.json");
  llm::ChatTemplate chat;
};

TEST_F(EpisodeTest, TemplateMaskMarksAssistantTokens) {
  const ToyTask task = makeToyTask(3);
  Json t = toyTrajectory(task, 0, toyDemonstration(task), Json::object(), "demo");
  Episode e = episodeFromTrajectory(t, tok, chat);
  EXPECT_EQ(e.tokens_from, "template");
  ASSERT_EQ(e.sequences.size(), 1u);
  const Sequence& s = e.sequences[0];
  // The masked tokens decode to the answer plus <|im_end|>.
  std::vector<int32_t> answer;
  for (size_t i = 0; i < s.ids.size(); ++i)
    if (s.mask[i]) answer.push_back(s.ids[i]);
  EXPECT_EQ(tok.decode(answer), toyDemonstration(task) + "<|im_end|>");
  EXPECT_EQ(s.mask[0], 0);
  EXPECT_EQ(*e.reward, 1.0);
  EXPECT_TRUE(e.passed);
}

TEST_F(EpisodeTest, RecordedTokensAndPrefixMerge) {
  const ToyTask task = makeToyTask(4);
  Json t = toyTrajectory(task, 0, "x", {{"prompt_token_ids", {5, 6, 7}}, {"token_ids", {8, 9}}, {"logprobs", {-0.5, -0.25}}},
                         "train");
  // A second turn whose prompt extends the first sequence: merged.
  Json second = t["turns"][0];
  second["response"]["prompt_token_ids"] = {5, 6, 7, 8, 9, 10, 11};
  second["response"]["token_ids"] = {12};
  second["response"]["logprobs"] = {-1.0};
  t["turns"].push_back(second);
  // A third whose prompt does not (elision): a new sequence.
  Json third = second;
  third["response"]["prompt_token_ids"] = {5, 6, 99};
  third["response"]["token_ids"] = {13, 14};
  third["response"]["logprobs"] = {-2.0, -3.0};
  t["turns"].push_back(third);
  Episode e = episodeFromTrajectory(t, tok, chat);
  EXPECT_EQ(e.tokens_from, "recorded");
  ASSERT_EQ(e.sequences.size(), 2u);
  EXPECT_EQ(e.sequences[0].ids, (std::vector<int32_t>{5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(e.sequences[0].mask, (std::vector<uint8_t>{0, 0, 0, 1, 1, 0, 0, 1}));
  EXPECT_FLOAT_EQ(e.sequences[0].logprobs[4], -0.25f);
  EXPECT_FLOAT_EQ(e.sequences[0].logprobs[7], -1.0f);
  EXPECT_EQ(e.sequences[1].ids, (std::vector<int32_t>{5, 6, 99, 13, 14}));
  EXPECT_EQ(e.actionTokens(), 5u);
  EpisodeOptions cut;
  cut.max_length = 4;
  EXPECT_TRUE(episodeFromTrajectory(t, tok, chat, cut).truncated);
}
