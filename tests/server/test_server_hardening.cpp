// oscar-server against hostile input (issue 45): requests nested deep enough
// to overflow a recursive walk, malformed HTTP framing, half-sent requests,
// pipelining, NUL bytes in headers, shutdown with connections still open.
// Raw sockets (raw_http.h), because client libraries never send these.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "client_test_util.h"
#include "raw_http.h"

using namespace oscar::testing;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kKey = "hardening-key";
const std::string kAuth = std::string("Authorization: Bearer ") + kKey + "\r\n";

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// ~75,000 levels, the depth that overflowed the stack before the limit.
constexpr size_t kDeep = 75000;
std::string deep_array() { return repeat("[", kDeep) + "1" + repeat("]", kDeep); }
std::string deep_object() { return repeat("{\"a\":", kDeep) + "1" + repeat("}", kDeep); }

long ms_since(Clock::time_point t0) {
  return (long)std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

class ServerHardening : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const auto r = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny -o " + dir_->file("tiny.gguf"));
    ASSERT_EQ(r.first, 0) << r.second;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string model() { return dir_->file("tiny.gguf"); }
  // A server with an API key, 2 slots, and the extra flags given.
  static std::string start(ServerProcess& srv, const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"-m", model(), "-c", "1024", "-np", "2", "-t", "2", "--api-key", kKey};
    args.insert(args.end(), extra.begin(), extra.end());
    return srv.start(kBin + "/oscar-server", args, dir_->file(name + ".log"));
  }
  static bool healthy(int port) {
    return RawConnection::status(raw_exchange(port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 3000)) == 200;
  }
  static TempDir* dir_;
};
TempDir* ServerHardening::dir_ = nullptr;

// Every field that reaches a recursive walk, on both routes that render a
// chat: 400 naming the depth limit, and the server still answers.
TEST_F(ServerHardening, DeepNestingIsRejectedAndTheServerLives) {
  ServerProcess srv;
  ASSERT_EQ(start(srv, "deep"), "");
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {"tools", R"({"messages":[)" + user + R"(],"tools":[{"type":"function","function":{"name":"f","parameters":)" +
                    deep_object() + "}}]}"},
      {"chat_template_kwargs", R"({"messages":[)" + user + R"(],"chat_template_kwargs":{"x":)" + deep_array() + "}}"},
      {"tool_calls arguments (object)",
       R"({"messages":[)" + user +
           R"(,{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":)" +
           deep_object() + "}}]}]}"},
      {"tool_calls arguments (JSON text)",
       R"({"messages":[)" + user +
           R"(,{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":")" +
           repeat("[", kDeep) + repeat("]", kDeep) + R"("}}]}]})"},
  };
  for (const char* path : {"/v1/chat/completions", "/apply-template"}) {
    for (const auto& [what, body] : bodies) {
      const std::string answer = raw_exchange(srv.port(), post_json(path, body, kAuth), 10000);
      EXPECT_EQ(RawConnection::status(answer), 400) << path << " " << what << ": " << answer.substr(0, 300);
      EXPECT_NE(answer.find("deeper than"), std::string::npos) << path << " " << what << ": " << answer.substr(0, 300);
      ASSERT_TRUE(healthy(srv.port())) << "server died on " << path << " " << what << "\n" << srv.log();
    }
  }
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
