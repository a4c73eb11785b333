// Stop strings over streamed text: nothing of a stop string is ever emitted,
// whatever way the text is split, and nothing else is lost.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/stop_matcher.h"

using oscar::server::partial_suffix_match;
using oscar::server::StopMatcher;

namespace {

// Feeds `pieces`; returns everything emitted (push + flush) and the matcher state.
std::string run(StopMatcher& m, const std::vector<std::string>& pieces, std::vector<std::string>* emitted = nullptr) {
  std::string out;
  for (const auto& p : pieces) {
    const std::string e = m.push(p);
    if (emitted) emitted->push_back(e);
    out += e;
  }
  out += m.flush();
  return out;
}

}  // namespace

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.push(""), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m({"END"});
  EXPECT_EQ(run(m, {"hello END world"}), "hello ");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "END");
}

TEST(StopMatcher, StopSplitAcrossPiecesIsHeldBack) {
  StopMatcher m({"little girl"});
  std::vector<std::string> emitted;
  const std::string out = run(m, {"a lit", "tle", " gi", "rl named"}, &emitted);
  EXPECT_EQ(out, "a ");
  EXPECT_TRUE(m.stopped());
  for (const auto& e : emitted) EXPECT_EQ(e.find("lit"), std::string::npos) << e;
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("ab ST"), "ab ");  // "ST" could start STOP
  EXPECT_EQ(m.push("ART"), "START");   // it did not
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HeldTextIsFlushedAtTheEnd) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("end ST"), "end ");
  EXPECT_EQ(m.flush(), "ST");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(run(m, {"hello world"}), "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcher, NothingAfterStop) {
  StopMatcher m({"x"});
  EXPECT_EQ(m.push("ax"), "a");
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.flush(), "");
}

// Every way of cutting a text into pieces gives the same output as the
// whole text at once: the text before the first stop string.
TEST(StopMatcher, SplitInvariance) {
  const std::string text = "one two three four";
  const std::vector<std::vector<std::string>> stop_sets = {{"three"}, {"o t", "four"}, {"zz"}, {"e f", "r"}};
  for (const auto& stops : stop_sets) {
    size_t first = std::string::npos;
    for (const auto& s : stops) first = std::min(first, text.find(s));
    const std::string expected = text.substr(0, first);
    for (size_t a = 0; a <= text.size(); ++a)
      for (size_t b = a; b <= text.size(); ++b) {
        StopMatcher m(stops);
        EXPECT_EQ(run(m, {text.substr(0, a), text.substr(a, b - a), text.substr(b)}), expected)
            << "cuts " << a << "," << b;
      }
  }
}

TEST(StopMatcher, PartialSuffixMatch) {
  EXPECT_EQ(partial_suffix_match("abc", "cde"), 1u);
  EXPECT_EQ(partial_suffix_match("abcd", "cde"), 2u);
  EXPECT_EQ(partial_suffix_match("abcde", "cde"), 0u);  // complete matches are not partial
  EXPECT_EQ(partial_suffix_match("", "cde"), 0u);
  EXPECT_EQ(partial_suffix_match("xyz", ""), 0u);
}
