// The small pure parts of the server: API-key checks, SSE framing, error
// bodies, slot choice with prefix reuse, log-probabilities and metrics text.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "server/api_error.h"
#include "server/auth.h"
#include "server/logprobs.h"
#include "server/metrics.h"
#include "server/prefix_reuse.h"
#include "server/sse.h"

using namespace oscar::server;
using Json = nlohmann::ordered_json;

TEST(Auth, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(constant_time_equal("secret", "secret2"));
  EXPECT_FALSE(constant_time_equal("secret2", "secret"));
  EXPECT_FALSE(constant_time_equal("", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", ""));
  EXPECT_TRUE(constant_time_equal("", ""));
  // Embedded NULs are compared like any byte.
  EXPECT_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(Auth, PresentedKeyAndAcceptance) {
  EXPECT_EQ(presented_key("Bearer abc", ""), "abc");
  EXPECT_EQ(presented_key("", "xyz"), "xyz");
  EXPECT_EQ(presented_key("Basic abc", "k"), "k");
  EXPECT_TRUE(key_accepted({}, ""));
  EXPECT_TRUE(key_accepted({"a", "b"}, "b"));
  EXPECT_FALSE(key_accepted({"a", "b"}, "c"));
  EXPECT_FALSE(key_accepted({"a"}, ""));
}

TEST(Sse, Framing) {
  EXPECT_EQ(sse_data(Json{{"a", "x\ny"}}), "data: {\"a\":\"x\\ny\"}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Invalid UTF-8 in generated text is replaced, never thrown.
  EXPECT_EQ(sse_data(Json{{"t", std::string("a\xff")}}), "data: {\"t\":\"a\xef\xbf\xbd\"}\n\n");
  const std::string e = sse_error(500, "boom");
  EXPECT_EQ(e.rfind("data: ", 0), 0u);
  EXPECT_NE(e.find("\"message\":\"boom\""), std::string::npos);
}

TEST(ErrorBody, OpenAiShape) {
  const Json b = error_body(400, "bad", "", {{"n_ctx", 5}});
  EXPECT_EQ(b["error"]["code"], 400);
  EXPECT_EQ(b["error"]["message"], "bad");
  EXPECT_EQ(b["error"]["type"], "invalid_request_error");
  EXPECT_EQ(b["error"]["n_ctx"], 5);
  EXPECT_EQ(error_body(401, "k")["error"]["type"], "authentication_error");
  EXPECT_EQ(error_body(503, "l")["error"]["type"], "unavailable_error");
}

TEST(PrefixReuse, CommonAndReusablePrefix) {
  const std::vector<int32_t> a{1, 2, 3, 4}, b{1, 2, 9}, c{1, 2, 3, 4};
  EXPECT_EQ(common_prefix(a, b), 2u);
  EXPECT_EQ(reusable_prefix(a, b), 2u);
  // The whole prompt cached: the last token is evaluated again for its logits.
  EXPECT_EQ(reusable_prefix(a, c), 3u);
  EXPECT_EQ(reusable_prefix({}, c), 0u);
  const std::vector<int32_t> longer{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(reusable_prefix(longer, c), 3u);
  EXPECT_EQ(reusable_prefix(c, longer), 4u);
}

TEST(PrefixReuse, ChooseSlot) {
  const std::vector<int32_t> s0{1, 2, 3}, s1{1, 2, 3, 4, 5}, s2{};
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6};
  // Longest reusable prefix among free slots.
  EXPECT_EQ(choose_slot({{true, &s0, 1}, {true, &s1, 2}, {true, &s2, 3}}, prompt), 1);
  // A busy slot is never chosen.
  EXPECT_EQ(choose_slot({{true, &s0, 1}, {false, &s1, 2}, {true, &s2, 3}}, prompt), 0);
  // Nothing to reuse: the least recently used.
  const std::vector<int32_t> other{9};
  EXPECT_EQ(choose_slot({{true, &s0, 5}, {true, &s1, 2}, {true, &s2, 3}}, other), 1);
  EXPECT_EQ(choose_slot({{false, &s0, 1}}, prompt), -1);
  EXPECT_EQ(choose_slot({}, prompt), -1);
}

TEST(LogProbs, MatchesLogSoftmax) {
  const float logits[] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  double z = 0;
  for (float l : logits) z += std::exp((double)l);
  const LogProbs lp = compute_logprobs(logits, 5, 4, 3);
  EXPECT_NEAR(lp.token_logprob, 0.5 - std::log(z), 1e-5);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);  // tie 1/3 broken by the smaller id
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 0);
  EXPECT_NEAR(lp.top[2].second, 1.0 - std::log(z), 1e-5);
  double total = 0;
  for (int i = 0; i < 5; ++i) total += std::exp(compute_logprobs(logits, 5, i, 0).token_logprob);
  EXPECT_NEAR(total, 1.0, 1e-5);
  EXPECT_EQ(compute_logprobs(logits, 5, 0, 50).top.size(), 5u);
}

TEST(Metrics, PrometheusText) {
  SchedulerStats s;
  s.prompt_tokens_total = 100;
  s.prompt_seconds_total = 2;
  s.predicted_tokens_total = 30;
  s.predicted_seconds_total = 3;
  s.queue_depth = 2;
  s.processing = 1;
  s.kv.sink_cells = 4;
  s.kv.main_cells = 10;
  s.kv.recent_cells = 6;
  s.kv.bits_per_value = 5.5;
  const std::string t = render_metrics(s, {7, 1, 3}, 4);
  EXPECT_NE(t.find("# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 100\n"), std::string::npos);
  EXPECT_NE(t.find("llamacpp:prompt_tokens_seconds 50\n"), std::string::npos);
  EXPECT_NE(t.find("llamacpp:predicted_tokens_seconds 10\n"), std::string::npos);
  EXPECT_NE(t.find("llamacpp:requests_deferred 2\n"), std::string::npos);
  EXPECT_NE(t.find("oscar:kv_cells{tier=\"main\"} 10\n"), std::string::npos);
  EXPECT_NE(t.find("oscar:kv_bits_per_value 5.5\n"), std::string::npos);
  EXPECT_NE(t.find("oscar:requests_total 7\n"), std::string::npos);
  // Every sample line is "name[{labels}] value".
  std::istringstream in(t);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    char* end = nullptr;
    std::strtod(line.c_str() + sp + 1, &end);
    EXPECT_EQ(*end, '\0') << line;
  }
}
