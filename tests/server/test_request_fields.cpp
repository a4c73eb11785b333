// llama-server's request fields, the pure parts: prompts in every shape,
// logit_bias by id and by text, the default seed, n and id_slot limits,
// response_fields projection, assistant prefill, post-sampling
// probabilities, and the shapes several choices merge into.
#include <gtest/gtest.h>

#include <cmath>

#include "server/api_error.h"
#include "server/chat_continuation.h"
#include "server/logprobs.h"
#include "server/request_parse.h"
#include "server/response_shaper.h"
#include "server/shaper_test_util.h"

using namespace oscar::server;

namespace {

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 0;
}

// A stand-in tokenizer: one token per character (id = byte value).
VocabAccess char_vocab() {
  return {256, [](const std::string& s) {
            std::vector<int32_t> ids;
            for (unsigned char c : s) ids.push_back(c);
            return ids;
          }};
}

Event token_event(int index, int32_t id, const std::string& text) {
  Event e;
  e.index = index;
  TokenOut t;
  t.token = id;
  t.text = text;
  e.tokens.push_back(t);
  return e;
}

Event done_event(int index, FinishReason r, int n_prompt, int n_predicted) {
  Event e;
  e.index = index;
  Done d;
  d.reason = r;
  d.timings.n_prompt = n_prompt;
  d.timings.n_predicted = n_predicted;
  e.done = d;
  return e;
}

}  // namespace

TEST(RequestFields, PromptShapes) {
  // One string; token ids; ids and strings mixed (one prompt, pieces in order).
  auto one = parse_prompts(parse_body(R"({"prompt": "hi"})"), 100);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0][0].text, "hi");
  auto mixed = parse_prompts(parse_body(R"({"prompt": [1, 2, "mid", 3]})"), 100);
  ASSERT_EQ(mixed.size(), 1u);
  ASSERT_EQ(mixed[0].size(), 3u);
  EXPECT_FALSE(mixed[0][0].is_text);
  EXPECT_EQ(mixed[0][0].tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(mixed[0][1].text, "mid");
  EXPECT_EQ(mixed[0][2].tokens, (std::vector<int32_t>{3}));
  // Several prompts: strings, id lists, the JSON-object form.
  auto many = parse_prompts(parse_body(R"({"prompt": ["a", [5, 6], {"prompt_string": "b"}, [7, "c"]]})"), 100);
  ASSERT_EQ(many.size(), 4u);
  EXPECT_EQ(many[1][0].tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(many[2][0].text, "b");
  EXPECT_EQ(many[3].size(), 2u);
  auto obj = parse_prompts(parse_body(R"({"prompt": {"prompt_string": "x"}})"), 100);
  ASSERT_EQ(obj.size(), 1u);
  EXPECT_EQ(obj[0][0].text, "x");
}

TEST(RequestFields, BadPrompts) {
  for (const char* body : {R"({})", R"({"prompt": 3})", R"({"prompt": []})", R"({"prompt": [1, 100]})",
                           R"({"prompt": [[-1]]})", R"({"prompt": [1.5]})", R"({"prompt": {"a": 1}})",
                           R"({"prompt": [[]]})", R"({"prompt": [{"x": 1}]})"})
    EXPECT_EQ(status_of([&] { parse_prompts(parse_body(body), 100); }), 400) << body;
}

TEST(RequestFields, PromptCountIsBounded) {
  Json body = {{"prompt", Json::array()}};
  for (size_t i = 0; i < kMaxPrompts; ++i) body["prompt"].push_back("x");
  EXPECT_EQ(parse_prompts(body, 100).size(), kMaxPrompts);
  body["prompt"].push_back("x");
  EXPECT_EQ(status_of([&] { parse_prompts(body, 100); }), 400);
}

TEST(RequestFields, MultimodalPromptIsAClear400) {
  try {
    parse_prompts(parse_body(R"({"prompt": {"prompt_string": "<__media__>", "multimodal_data": ["iVBO"]}})"), 100);
    FAIL() << "accepted multimodal data";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("multimodal"), std::string::npos) << e.what();
  }
}

TEST(RequestFields, LogitBiasByIdAndByText) {
  const VocabAccess v = char_vocab();
  // OpenAI's object: digits are ids, anything else is text (each of its tokens).
  auto a = parse_logit_bias(Json::parse(R"({"65": -5, "hi": 2})"), v);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], (std::pair<int32_t, float>{65, -5.0f}));
  EXPECT_EQ(a[1], (std::pair<int32_t, float>{'h', 2.0f}));
  EXPECT_EQ(a[2], (std::pair<int32_t, float>{'i', 2.0f}));
  // llama.cpp's array: [id or text, bias]; false bans.
  auto b = parse_logit_bias(Json::parse(R"([[66, false], ["z", -1.5]])"), v);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].first, 66);
  EXPECT_TRUE(std::isinf(b[0].second) && b[0].second < 0);
  EXPECT_EQ(b[1], (std::pair<int32_t, float>{'z', -1.5f}));
  // Through the request parser too.
  const GenParams p =
      parse_gen_params(parse_body(R"({"logit_bias": {"ab": -100}})"), GenParams{}, Api::Native, 1, v);
  EXPECT_EQ(p.sampling.logit_bias.size(), 2u);
  for (const char* bad : {R"({"300": 1})", R"([[1]])", R"([[1, "x"]])", R"({"1": true})", R"(7)"})
    EXPECT_EQ(status_of([&] { parse_logit_bias(Json::parse(bad), v); }), 400) << bad;
}

TEST(RequestFields, SeedDefaultsToTheServers) {
  GenParams server;
  server.sampling.seed = 42;  // --seed 42
  EXPECT_EQ(parse_gen_params(parse_body("{}"), server, Api::Native, 777).sampling.seed, 42u);
  EXPECT_EQ(parse_gen_params(parse_body(R"({"seed": 5})"), server, Api::Native, 777).sampling.seed, 5u);
  // -1 asks for a random seed, whatever the server's.
  EXPECT_EQ(parse_gen_params(parse_body(R"({"seed": -1})"), server, Api::Native, 777).sampling.seed, 777u);
  // A server without --seed draws one per request.
  EXPECT_EQ(parse_gen_params(parse_body("{}"), GenParams{}, Api::Native, 777).sampling.seed, 777u);
}

TEST(RequestFields, ChoicesAndSlots) {
  EXPECT_EQ(parse_n_choices(parse_body("{}"), 4), 1);
  EXPECT_EQ(parse_n_choices(parse_body(R"({"n": 3})"), 4), 3);
  EXPECT_EQ(parse_n_choices(parse_body(R"({"n_cmpl": 2})"), 4), 2);
  for (const char* bad : {R"({"n": 0})", R"({"n": 5})", R"({"n": "2"})", R"({"n": 1.5})"})
    EXPECT_EQ(status_of([&] { parse_n_choices(parse_body(bad), 4); }), 400) << bad;
  EXPECT_EQ(parse_id_slot(parse_body("{}"), 2), -1);
  EXPECT_EQ(parse_id_slot(parse_body(R"({"id_slot": 1})"), 2), 1);
  for (const char* bad : {R"({"id_slot": 2})", R"({"id_slot": -2})", R"({"id_slot": "0"})"})
    EXPECT_EQ(status_of([&] { parse_id_slot(parse_body(bad), 2); }), 400) << bad;
}

TEST(RequestFields, RequestFlagsParsed) {
  const GenParams p = parse_gen_params(
      parse_body(R"({"post_sampling_probs": true, "return_progress": true, "timings_per_token": true,
                     "cache_prompt": false, "n_probs": 3})"),
      GenParams{}, Api::Native, 1);
  EXPECT_TRUE(p.post_sampling_probs);
  EXPECT_TRUE(p.return_progress);
  EXPECT_TRUE(p.timings_per_token);
  EXPECT_FALSE(p.cache_prompt);
  EXPECT_EQ(p.n_probs, 3);
  EXPECT_EQ(status_of([] { parse_response_fields(parse_body(R"({"response_fields": "content"})")); }), 400);
  EXPECT_EQ(parse_response_fields(parse_body(R"({"response_fields": ["a", "b/c"]})")).size(), 2u);
}

TEST(RequestFields, ResponseFieldsProjection) {
  const Json full = Json::parse(R"({"content": "hi", "stop": true,
                                    "generation_settings": {"n_predict": 8, "seed": 1}})");
  const Json r = project_fields(full, {"content", "generation_settings/n_predict", "missing", "content/deeper"});
  // Exactly the paths that exist; a nested one keeps its path as the key.
  EXPECT_EQ(r, Json::parse(R"({"content": "hi", "generation_settings/n_predict": 8})"));
}

TEST(RequestFields, AssistantPrefill) {
  const Json body = parse_body(R"({"messages": [{"role": "user", "content": "Say hi"},
                                               {"role": "assistant", "content": "Hel"}]})");
  const ChatRequest r = parse_chat_request(body);
  EXPECT_TRUE(r.continue_final);
  EXPECT_FALSE(r.add_generation_prompt);
  const ChatRequest plain = parse_chat_request(parse_body(R"({"messages": [{"role": "user", "content": "x"}]})"));
  EXPECT_FALSE(plain.continue_final);
  EXPECT_TRUE(plain.add_generation_prompt);
  for (const char* bad :
       {R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})",
        R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "a"}],
            "continue_final_message": true, "add_generation_prompt": true})",
        R"({"messages": [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]})"})
    EXPECT_EQ(status_of([&] { parse_chat_request(parse_body(bad)); }), 400) << bad;
  // The prompt is the rendering cut after the final message's text (its end-of-turn dropped).
  const std::string rendered = "<|user|>Say hi<|end|><|assistant|>Hel<|end|>";
  EXPECT_EQ(continuation_prompt(rendered, "Hel", [] { return std::string("unused"); }),
            "<|user|>Say hi<|end|><|assistant|>Hel");
  // The whole path: the request's rendering, continued.
  auto render = [](const ChatRequest& c) {
    std::string out;
    for (const auto& m : c.messages)
      out += "<|" + m["role"].get<std::string>() + "|>" + m["content"].get<std::string>() + "<|end|>";
    return c.add_generation_prompt ? out + "<|assistant|>" : out;
  };
  EXPECT_EQ(chat_prompt(r, render), "<|user|>Say hi<|end|><|assistant|>Hel");
  EXPECT_EQ(chat_prompt(plain, render), "<|user|>x<|end|><|assistant|>");
  // Text the template rewrote (or none): the generation prompt, then the text.
  EXPECT_EQ(continuation_prompt(rendered, "", [] { return std::string("<|user|>Say hi<|end|><|assistant|>"); }),
            "<|user|>Say hi<|end|><|assistant|>");
}

TEST(RequestFields, PostSamplingProbs) {
  // Candidates as the sampler leaves them: three kept, one dropped (p = 0).
  const std::vector<oscar::sampling::Candidate> kept = {{7, 0, 0.5f}, {3, 0, 0.3f}, {9, 0, 0.2f}, {1, 0, 0.0f}};
  const LogProbs lp = post_sampling_logprobs(kept, 3, 10);
  EXPECT_NEAR(std::exp(lp.token_logprob), 0.3f, 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);  // fewer than asked: zero-probability tokens are never listed
  EXPECT_EQ(lp.top[0].first, 7);
  EXPECT_EQ(lp.top[2].first, 9);
  EXPECT_TRUE(std::isinf(post_sampling_logprobs(kept, 1, 2).token_logprob));
}

TEST(ResponseFields, NativeProbsCarryBytesAndPostSamplingNames) {
  ShaperInfo info = basic_info("id", "m", 0, false, true, 1);
  info.post_sampling_probs = true;
  auto s = make_native_shaper(info, Json::object());
  Event e = token_event(0, 5, "é");
  e.tokens[0].prob = TokenProb{5, "é", std::log(0.25f)};
  e.tokens[0].top = {TokenProb{5, "é", std::log(0.25f)}};
  s->chunks(e);
  s->chunks(done_event(0, FinishReason::Length, 2, 1));
  const Json cp = s->response()["completion_probabilities"][0];
  EXPECT_EQ(cp["bytes"], Json::array({0xC3, 0xA9}));
  EXPECT_NEAR(cp["prob"].get<double>(), 0.25, 1e-6);
  EXPECT_FALSE(cp.contains("logprob"));
  EXPECT_EQ(cp["top_probs"][0]["id"], 5);
  EXPECT_EQ(cp["top_probs"][0]["bytes"], Json::array({0xC3, 0xA9}));
}

TEST(ResponseFields, NativeTruncatedTokensAndProjection) {
  ShaperInfo info = basic_info("id", "m", 0, false, false, 0);
  info.return_tokens = true;
  info.prompt_text = "<s> hi";
  auto s = make_native_shaper(info, Json{{"n_predict", 4}});
  s->chunks(token_event(0, 11, "a"));
  Event d = done_event(0, FinishReason::Length, 3, 1);
  d.done->truncated = true;
  s->chunks(d);
  const Json r = s->response();
  EXPECT_EQ(r["truncated"], true);
  EXPECT_EQ(r["tokens"], Json::array({11}));
  EXPECT_EQ(r["prompt"], "<s> hi");
  info.return_tokens = false;
  info.response_fields = {"content", "generation_settings/n_predict"};
  auto p = make_native_shaper(info, Json{{"n_predict", 4}});
  p->chunks(token_event(0, 11, "a"));
  p->chunks(done_event(0, FinishReason::Length, 3, 1));
  EXPECT_EQ(p->response(), Json::parse(R"({"content": "a", "generation_settings/n_predict": 4})"));
}

TEST(ResponseFields, ChatStreamStartsWithRoleAndNullContent) {
  auto s = make_chat_shaper(basic_info("id", "m", 0, false, false, 0), oscar::chat::ChatOutputFormat{}, "");
  const std::vector<Json> first = s->chunks(token_event(0, 1, "Hi"));
  ASSERT_GE(first.size(), 2u);
  const Json& delta = first[0]["choices"][0]["delta"];
  EXPECT_EQ(delta["role"], "assistant");
  ASSERT_TRUE(delta.contains("content"));
  EXPECT_TRUE(delta["content"].is_null());
  const std::vector<Json> last = s->chunks(done_event(0, FinishReason::Stop, 2, 1));
  EXPECT_TRUE(last.back().contains("timings"));  // timings ride on the last chunk
}

TEST(ResponseFields, ProgressAndPerTokenTimingsChunks) {
  auto s = make_native_shaper(basic_info("id", "m", 0, false, false, 0), Json::object());
  Event p;
  p.progress = PromptProgress{10, 4, 7, 1.5};
  const std::vector<Json> c = s->chunks(p);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["prompt_progress"], Json::parse(R"({"total": 10, "cache": 4, "processed": 7, "time_ms": 1.5})"));
  EXPECT_EQ(c[0]["stop"], false);
  Event t = token_event(0, 3, "x");
  t.timings = Timings{10, 4, 1, 2.0, 1.0, 0.0};
  EXPECT_EQ(s->chunks(t)[0]["timings"]["predicted_n"], 1);
}

TEST(ResponseFields, SeveralChoicesMerge) {
  std::vector<std::unique_ptr<ResponseShaper>> each;
  for (int i = 0; i < 3; ++i) {
    ShaperInfo info = basic_info("id", "m", 0, false, false, 0);
    info.index = i;
    each.push_back(make_completions_shaper(info));
  }
  auto m = make_multi_shaper(std::move(each), MergeKind::OpenAiChoices, true, 3);
  std::vector<Json> streamed;
  for (int i : {2, 0, 1}) {
    for (const Json& c : m->chunks(token_event(i, 1, "t" + std::to_string(i)))) streamed.push_back(c);
    EXPECT_FALSE(m->complete());
  }
  for (int i : {1, 2}) m->chunks(done_event(i, FinishReason::Length, 5, 1));
  EXPECT_FALSE(m->complete());
  const std::vector<Json> tail = m->chunks(done_event(0, FinishReason::Length, 5, 1));
  EXPECT_TRUE(m->complete());
  // Streamed chunks name their choice; one usage chunk ends the stream.
  EXPECT_EQ(streamed[0]["choices"][0]["index"], 2);
  ASSERT_TRUE(tail.back().contains("usage"));
  EXPECT_TRUE(tail.back()["choices"].empty());
  const Json r = m->response();
  ASSERT_EQ(r["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["text"], "t" + std::to_string(i));
  }
  // The prompt is counted once for its three choices.
  EXPECT_EQ(r["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
  EXPECT_EQ(tail.back()["usage"], r["usage"]);
}

TEST(ResponseFields, SeveralNativePromptsAnswerAnArray) {
  std::vector<std::unique_ptr<ResponseShaper>> each;
  for (int i = 0; i < 2; ++i) {
    ShaperInfo info = basic_info("id", "m", 0, false, false, 0);
    info.index = i;
    each.push_back(make_native_shaper(info, Json::object()));
  }
  auto m = make_multi_shaper(std::move(each), MergeKind::NativeArray, false, 1);
  for (int i : {0, 1}) {
    m->chunks(token_event(i, 1, i ? "b" : "a"));
    m->chunks(done_event(i, FinishReason::Stop, 2, 1));
  }
  const Json r = m->response();
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["content"], "a");
  EXPECT_EQ(r[1]["content"], "b");
  EXPECT_EQ(r[1]["index"], 1);
  EXPECT_FALSE(m->done_marker());
}

TEST(ResponseFields, TaskChannelsForwardTaggedAndShareCancellation) {
  auto shared = std::make_shared<Channel>();
  Channel first(shared, 0), third(shared, 2);
  third.push(token_event(0, 1, "c"));
  first.push(token_event(7, 1, "a"));  // the tag is the channel's, whatever the event said
  const std::vector<Event> got = shared->wait(std::chrono::milliseconds(0));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].index, 2);
  EXPECT_EQ(got[1].index, 0);
  EXPECT_FALSE(third.cancelled());
  shared->cancel();  // the client went away: every task of the request stops
  EXPECT_TRUE(first.cancelled());
  EXPECT_TRUE(third.cancelled());
}
