// Reasoning split over streams cut at every possible position: the result
// must not depend on where token boundaries fall, and no marker (or part of
// one) may ever reach the reasoning or the content.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "chat/chat_output_parser.h"
#include "chat/reasoning_parser.h"

namespace oscar::chat {
namespace {

struct Split {
  std::string reasoning, content;
};

Split run(const ReasoningFormat& fmt, bool open, const std::vector<std::string>& pieces) {
  ReasoningParser p(fmt, open);
  Split s;
  for (const auto& piece : pieces) {
    ReasoningDelta d = p.feed(piece);
    s.reasoning += d.reasoning;
    s.content += d.content;
  }
  ReasoningDelta d = p.finish();
  s.reasoning += d.reasoning;
  s.content += d.content;
  return s;
}

// Feeds `text` whole, split once at every position, split twice at every
// pair of positions (short inputs), byte by byte and in random pieces; all
// must give `want`.
void check_all_splits(const ReasoningFormat& fmt, bool open, const std::string& text, const Split& want) {
  auto check = [&](const std::vector<std::string>& pieces, const std::string& how) {
    const Split got = run(fmt, open, pieces);
    ASSERT_EQ(got.reasoning, want.reasoning) << how << " input: " << text;
    ASSERT_EQ(got.content, want.content) << how << " input: " << text;
  };
  check({text}, "whole");
  for (size_t i = 0; i <= text.size(); ++i) check({text.substr(0, i), text.substr(i)}, "split@" + std::to_string(i));
  if (text.size() <= 80)
    for (size_t i = 0; i <= text.size(); ++i)
      for (size_t j = i; j <= text.size(); ++j)
        check({text.substr(0, i), text.substr(i, j - i), text.substr(j)},
              "split@" + std::to_string(i) + "," + std::to_string(j));
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  check(bytes, "bytewise");
  std::mt19937 rng(42);
  for (int r = 0; r < 50; ++r) {
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t n = 1 + rng() % 6;
      pieces.push_back(text.substr(i, n));
      i += n;
    }
    check(pieces, "random");
  }
}

TEST(ReasoningParser, ThinkBlockEmittedByModel) {
  check_all_splits(ReasoningFormat::think(), false, "<think>\nLet me think: 6*7.\n</think>\n\nThe answer is 42.",
                   {"Let me think: 6*7.", "The answer is 42."});
}

TEST(ReasoningParser, ThinkBlockOpenedByPrompt) {
  check_all_splits(ReasoningFormat::think(), true, "I reason here.\nSecond line.\n</think>\n\nAnswer",
                   {"I reason here.\nSecond line.", "Answer"});
  // A model repeating the start marker the prompt already wrote.
  check_all_splits(ReasoningFormat::think(), true, "<think>\nr1\n</think>a", {"r1", "a"});
}

TEST(ReasoningParser, NoReasoning) {
  check_all_splits(ReasoningFormat::think(), false, "Just an answer: a < b, <b>bold</b>, <thinking> and <th",
                   {"", "Just an answer: a < b, <b>bold</b>, <thinking> and <th"});
}

TEST(ReasoningParser, EmptyAndUnterminatedBlocks) {
  check_all_splits(ReasoningFormat::think(), false, "<think>\n\n</think>\n\nHi", {"", "Hi"});
  check_all_splits(ReasoningFormat::think(), false, "<think>still thinking when cut off  ",
                   {"still thinking when cut off", ""});
  check_all_splits(ReasoningFormat::think(), true, "", {"", ""});
}

TEST(ReasoningParser, Utf8AndMarkersInside) {
  check_all_splits(ReasoningFormat::think(), false, "<think>思考 👋 </thin</think>答案👋 <", {"思考 👋 </thin", "答案👋 <"});
}

TEST(ReasoningParser, Gemma4ThoughtChannel) {
  check_all_splits(ReasoningFormat::gemma4(), false, "<|channel>thought\nThinking about it...<channel|>Final answer.",
                   {"Thinking about it...", "Final answer."});
  check_all_splits(ReasoningFormat::gemma4(), false, "<|channel>thought\n<channel|>Direct.", {"", "Direct."});
}

TEST(ReasoningParser, HoldsBackOnlyPossibleMarkers) {
  ReasoningParser p(ReasoningFormat::think(), false);
  EXPECT_EQ(p.feed("Hello wor").content, "Hello wor");
  EXPECT_EQ(p.feed("ld <").content, "ld ");  // "<" may start "<think>"
  EXPECT_EQ(p.feed("b>").content, "<b>");
  EXPECT_EQ(p.feed("\xe4\xbd").content, "");  // half of a UTF-8 character
  EXPECT_EQ(p.feed("\xa0").content, "\xe4\xbd\xa0");
  ReasoningParser q(ReasoningFormat::think(), true);
  EXPECT_EQ(q.feed("step one").reasoning, "step one");
  EXPECT_EQ(q.feed("\n</thi").reasoning, "");  // whitespace and a partial end marker held back
  ReasoningDelta d = q.feed("nk>\n\nok");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "ok");
}

TEST(ReasoningParser, PromptOpensReasoning) {
  const auto think = ReasoningFormat::think();
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", think));         // Qwen3.5, QwQ
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", think));  // thinking off
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n", think));                   // Qwen3
  EXPECT_FALSE(prompt_opens_reasoning("<|turn>model\n<|channel>thought\n<channel|>", ReasoningFormat::gemma4()));
}

}  // namespace
}  // namespace oscar::chat
