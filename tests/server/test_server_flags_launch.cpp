// oscar-server started the way llama-server launch scripts start it: many of
// llama-server's flags at once (GPU and placement flags it cannot use are
// logged once each), LLAMA_ARG_* variables, HTTPS with --ssl-*-file, and
// -hf from a loopback server with the hub's URL layout, then again
// --offline from the cache. Each launch checks the flags took effect.
#include <gtest/gtest.h>
#include <httplib.h>

#include <ctime>
#include <thread>

#include <nlohmann/json.hpp>

#include "client_test_util.h"
#include "download.h"

using namespace oscar::testing;
using Json = nlohmann::json;

namespace {

class ServerLaunch : public TinyModelSuite<ServerLaunch> {
};

httplib::Headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

Json post(httplib::Client& c, const std::string& path, const Json& body, const std::string& key, int* status = nullptr) {
  auto r = c.Post(path.c_str(), bearer(key), body.dump(), "application/json");
  if (!r) return {{"transport_error", httplib::to_string(r.error())}};
  if (status) *status = r->status;
  return Json::parse(r->body, nullptr, false);
}

TEST_F(ServerLaunch, ManyLlamaServerFlagsAtOnce) {
  ServerProcess srv;
  const std::string tmpl =
      "{%- for m in messages -%}{{ m.content }}{%- endfor -%}|{{ enable_thinking }}|{{ greeting }}";
  const std::string err = srv.start(
      kBin + "/oscar-server",
      {"-m", model(), "-c", "2048", "-np", "2", "-t", "2", "-ngl", "99", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0",
       "--mlock", "--no-mmap", "-b", "512", "-ub", "128", "--jinja", "--chat-template", tmpl, "--chat-template-kwargs",
       "{\"greeting\": \"hello\"}", "--reasoning", "off", "--reasoning-format", "deepseek", "--props", "--slots",
       "--metrics", "--tags", "chat,small", "-a", "tiny", "--api-key", "k1,k2", "--seed", "7", "--temp", "0.9",
       "--top-k", "20", "-n", "6", "--cont-batching", "--no-webui", "--numa", "distribute", "-sm", "layer", "-ts", "3,1",
       "-mg", "0", "--context-shift", "-cram", "1024", "--sleep-idle-seconds", "300", "--slot-save-path",
       dir_->file("slots"), "-to", "60", "--threads-http", "8", "--log-colors", "off", "--no-warmup", "--cache-reuse",
       "256", "-kvo", "--swa-full"},
      dir_->file("many.log"), {{"LLAMA_ARG_N_PARALLEL", "4"}, {"LLAMA_ARG_ENDPOINT_SLOTS", "0"}});
  ASSERT_EQ(err, "");
  const std::string log = srv.log();
  // One line per flag that has no effect here, naming it.
  for (const char* f : {"-ngl:", "--numa:", "-sm:", "-ts:", "-mg:", "--mlock:", "--no-warmup:", "--cache-reuse:"}) {
    const size_t at = log.find(std::string(f) + " accepted, no effect here");
    EXPECT_NE(at, std::string::npos) << f << "\n" << log;
    EXPECT_EQ(log.find(std::string(f) + " accepted", at + 1), std::string::npos) << f << " logged twice";
  }
  EXPECT_EQ(log.find("-fa: accepted"), std::string::npos);  // flags that work are not noted

  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(60, 0);
  // Both keys work; another does not.
  auto models = c.Get("/v1/models", bearer("k2"));
  ASSERT_TRUE(models);
  ASSERT_EQ(models->status, 200);
  const Json m = Json::parse(models->body);
  EXPECT_EQ(m["data"][0]["id"], "tiny");
  EXPECT_EQ(m["data"][0]["tags"], Json::array({"chat", "small"}));
  // /v1/models is public, as in llama-server; /props is not.
  EXPECT_EQ(c.Get("/props", bearer("k3"))->status, 401);

  // The flag beats LLAMA_ARG_N_PARALLEL=4 and --slots beats LLAMA_ARG_ENDPOINT_SLOTS=0.
  auto props = c.Get("/props", bearer("k1"));
  ASSERT_TRUE(props);
  const Json p = Json::parse(props->body);
  EXPECT_EQ(p["total_slots"], 2);
  EXPECT_EQ(c.Get("/slots", bearer("k1"))->status, 200);
  // Sampling flags are the defaults requests start from.
  const Json& gs = p["default_generation_settings"]["params"];
  EXPECT_EQ(gs["n_predict"], 6);
  EXPECT_EQ(gs["top_k"], 20);
  EXPECT_NEAR(gs["temperature"].get<double>(), 0.9, 1e-6);
  EXPECT_EQ(gs["seed"], 7);

  // --props: POST /props is allowed.
  int status = 0;
  EXPECT_EQ(post(c, "/props", Json::object(), "k1", &status)["success"], true);
  EXPECT_EQ(status, 200);

  // The template gets --chat-template-kwargs and enable_thinking=false (--reasoning off);
  // a request's own kwargs go on top.
  const Json msgs = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  EXPECT_EQ(post(c, "/apply-template", msgs, "k1")["prompt"], "hi|False|hello");
  Json own = msgs;
  own["chat_template_kwargs"] = {{"greeting", "bye"}, {"enable_thinking", true}};
  EXPECT_EQ(post(c, "/apply-template", own, "k1")["prompt"], "hi|True|bye");

  // --seed: requests without a seed sample the same tokens.
  const Json req = {{"prompt", "Once upon a time"}, {"n_predict", 8}};
  const Json a = post(c, "/completion", req, "k1");
  const Json b = post(c, "/completion", req, "k1");
  ASSERT_TRUE(a.contains("content")) << a.dump();
  EXPECT_EQ(a["content"], b["content"]);
  // -n 6: the default length.
  const Json d = post(c, "/completion", {{"prompt", "Once"}}, "k1");
  ASSERT_TRUE(d.contains("tokens")) << d.dump();
  EXPECT_LE(d["tokens"].size(), 6u);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerLaunch, OfficialClientSeesTheFlags) {
  const std::string why = node_client_missing();
  if (!why.empty()) GTEST_SKIP() << "client check skipped: " << why;
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", model(), "-c", "1024", "-np", "2", "-t", "2", "--api-key", "k1,k2", "-a",
                                     "tiny", "--tags", "chat,small", "--seed", "7", "-n", "5", "--temp", "1.0",
                                     "--chat-template", "llama3", "-ngl", "99", "--no-webui", "-fa", "auto"},
                                    dir_->file("client.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("flags.test.mjs", srv, 2, 512);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerLaunch, VariablesAloneStartTheServer) {
  ServerProcess srv;
  const std::string err =
      srv.start(kBin + "/oscar-server", {}, dir_->file("env.log"),
                {{"LLAMA_ARG_MODEL", model()}, {"LLAMA_ARG_CTX_SIZE", "1024"}, {"LLAMA_ARG_N_PARALLEL", "1"},
                 {"LLAMA_ARG_ALIAS", "env-model"}, {"LLAMA_ARG_THREADS", "2"}, {"LLAMA_ARG_NO_ENDPOINT_SLOTS", "1"},
                 {"LLAMA_ARG_CHAT_TEMPLATE", "gemma"}});
  ASSERT_EQ(err, "");
  httplib::Client c("127.0.0.1", srv.port());
  EXPECT_EQ(Json::parse(c.Get("/v1/models")->body)["data"][0]["id"], "env-model");
  EXPECT_EQ(Json::parse(c.Get("/props")->body)["total_slots"], 1);
  EXPECT_EQ(c.Get("/slots")->status, 501);
  EXPECT_EQ(c.Post("/props", "{}", "application/json")->status, 501);  // no --props
  const Json t = post(c, "/apply-template", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, "");
  EXPECT_EQ(t["prompt"], "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerLaunch, TemplatesSeeTheRealClockAndDate) {
  ServerProcess srv;
  const std::string err = srv.start(
      kBin + "/oscar-server", {"-m", model(), "-c", "512", "-np", "1", "-t", "2", "--chat-template",
                               "{{ strftime_now('%Y-%m-%d') }}|{{ date_string }}"},
      dir_->file("clock.log"));
  ASSERT_EQ(err, "");
  httplib::Client c("127.0.0.1", srv.port());
  const Json t = post(c, "/apply-template", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, "");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char want[64];
  std::strftime(want, sizeof want, "%Y-%m-%d|%d %b %Y", &tm);  // date_string as llama-server passes it
  EXPECT_EQ(t["prompt"], want);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerLaunch, BadFlagsFailWithAClearMessage) {
  auto r = run_capture(kBin + "/oscar-server -m " + model() + " --ofline");
  EXPECT_EQ(r.first, 1);
  EXPECT_NE(r.second.find("did you mean '--offline'?"), std::string::npos) << r.second;
  r = run_capture(kBin + "/oscar-server -m " + model() + " --chat-template llama9");
  EXPECT_EQ(r.first, 1);
  EXPECT_NE(r.second.find("'llama9'"), std::string::npos) << r.second;
  // Offline, a model that was never downloaded: the error names where it looked.
  r = run_capture("LLAMA_CACHE=" + dir_->file("empty-cache") + " " + kBin + "/oscar-server -hf user/none --offline");
  EXPECT_EQ(r.first, 1);
  EXPECT_NE(r.second.find(dir_->file("empty-cache") + "/models--user--none/snapshots"), std::string::npos) << r.second;
  r = run_capture(kBin + "/oscar-server --help");
  EXPECT_EQ(r.first, 0);
  EXPECT_NE(r.second.find("----- example-specific params -----"), std::string::npos);
}

TEST_F(ServerLaunch, ServesHttpsWithSslFlags) {
  if (run_capture("openssl version").first != 0) GTEST_SKIP() << "openssl is not installed";
  const std::string key = dir_->file("key.pem"), cert = dir_->file("cert.pem");
  const auto gen = run_capture("openssl req -x509 -newkey rsa:2048 -nodes -keyout " + key + " -out " + cert +
                               " -days 1 -subj /CN=127.0.0.1");
  ASSERT_EQ(gen.first, 0) << gen.second;
  ServerProcess srv;
  const std::string err =
      srv.start(kBin + "/oscar-server",
                {"-m", model(), "-c", "512", "-np", "1", "-t", "2", "--ssl-key-file", key, "--ssl-cert-file", cert},
                dir_->file("ssl.log"), {}, 60000, "server ready on https://127.0.0.1:");
  ASSERT_EQ(err, "");
  httplib::SSLClient c("127.0.0.1", srv.port());
  c.enable_server_certificate_verification(false);
  auto r = c.Get("/health");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
  // A key that is not PEM: a clear start-up error.
  const auto bad = run_capture(kBin + "/oscar-server -m " + model() + " --ssl-key-file " + model() +
                               " --ssl-cert-file " + cert + " --port 0");
  EXPECT_EQ(bad.first, 1);
  EXPECT_NE(bad.second.find("cannot load the certificate and key"), std::string::npos) << bad.second;
}

// The tiny model served under the hub's URL layout.
class HubServer {
 public:
  explicit HubServer(const std::string& model_path) : body_(read_all(model_path)) {
    const std::string sha = oscar::tools::sha256_file(model_path);
    const std::string commit(40, 'c');
    svr_.Get("/api/models/user/tiny/refs", [commit](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"branches":[{"name":"main","targetCommit":")" + commit + "\"}]}", "application/json");
    });
    svr_.Get("/api/models/user/tiny/tree/" + commit, [sha](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"([{"type":"file","path":"tiny-Q8_0.gguf","lfs":{"oid":")" + sha + "\"}}]", "application/json");
    });
    svr_.Get("/user/tiny/resolve/" + commit + "/tiny-Q8_0.gguf",
             [this](const httplib::Request&, httplib::Response& res) { res.set_content(body_, "application/octet-stream"); });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~HubServer() {
    svr_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string body_;
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ServerLaunch, HfRepoDownloadsThenServesOffline) {
  const std::string cache = dir_->file("hf-cache");
  std::string endpoint;
  {
    HubServer hub(model());
    endpoint = hub.endpoint();
    ServerProcess srv;
    const std::string err =
        srv.start(kBin + "/oscar-server", {"-hf", "user/tiny:Q8_0", "-c", "512", "-np", "1", "-t", "2"},
                  dir_->file("hf.log"), {{"LLAMA_CACHE", cache}, {"HF_ENDPOINT", endpoint}});
    ASSERT_EQ(err, "");
    EXPECT_EQ(srv.stop(), 0) << srv.log();
  }
  // The hub is gone: --offline finds the cached file and never tries the network.
  ServerProcess srv;
  const std::string err =
      srv.start(kBin + "/oscar-server", {"-hf", "user/tiny:Q8_0", "--offline", "-c", "512", "-np", "1", "-t", "2"},
                dir_->file("hf-offline.log"), {{"LLAMA_CACHE", cache}, {"HF_ENDPOINT", endpoint}});
  ASSERT_EQ(err, "");
  EXPECT_NE(srv.log().find("models--user--tiny/snapshots/"), std::string::npos) << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace

namespace {

// -v: chat and completions answers carry "__verbose", the same result in the
// native /completion shape (llama-server's debugging aid); once per stream,
// on the final event's first chunk; never without -v, never on /completion.
TEST_F(ServerLaunch, VerboseAddsTheNativeResultToOpenAiAnswers) {
  for (const bool verbose : {true, false}) {
    ServerProcess srv;
    std::vector<std::string> args = {"-m", model(), "-c", "512", "-np", "1", "-t", "2"};
    if (verbose) args.push_back("-v");
    ASSERT_EQ(srv.start(kBin + "/oscar-server", args, dir_->file(verbose ? "verbose.log" : "quiet.log")), "");
    httplib::Client c("127.0.0.1", srv.port());
    c.set_read_timeout(30, 0);
    const Json chat = post(c, "/v1/chat/completions",
                           {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 6}, {"temperature", 0}},
                           "");
    const Json cmpl = post(c, "/v1/completions", {{"prompt", "hello"}, {"max_tokens", 5}, {"temperature", 0}}, "");
    const Json native = post(c, "/completion", {{"prompt", "hello"}, {"n_predict", 5}, {"temperature", 0}}, "");
    EXPECT_FALSE(native.contains("__verbose"));
    auto stream = c.Post("/v1/chat/completions",
                         Json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 6}, {"stream", true}}.dump(),
                         "application/json");
    ASSERT_TRUE(stream);
    size_t seen = 0;
    for (size_t at = stream->body.find("\"__verbose\""); at != std::string::npos; at = stream->body.find("\"__verbose\"", at + 1))
      ++seen;
    if (!verbose) {
      EXPECT_FALSE(chat.contains("__verbose")) << chat.dump();
      EXPECT_FALSE(cmpl.contains("__verbose")) << cmpl.dump();
      EXPECT_EQ(seen, 0u);
    } else {
      ASSERT_TRUE(chat.contains("__verbose")) << chat.dump();
      const Json& v = chat["__verbose"];
      EXPECT_EQ(v["content"], chat["choices"][0]["message"]["content"]);
      EXPECT_EQ(v["tokens_predicted"], chat["usage"]["completion_tokens"]);
      EXPECT_EQ(v["tokens_evaluated"], chat["usage"]["prompt_tokens"]);
      EXPECT_TRUE(v.contains("generation_settings"));
      ASSERT_TRUE(cmpl.contains("__verbose")) << cmpl.dump();
      EXPECT_EQ(cmpl["__verbose"]["content"], cmpl["choices"][0]["text"]);
      EXPECT_EQ(seen, 1u) << stream->body;
    }
    EXPECT_EQ(srv.stop(), 0) << srv.log();
  }
}

}  // namespace
