// oscar-server's web UI routes and the KV figures the page shows, over real
// HTTP against the trained default model (oscar-tiny: 6 layers, 2 KV heads of
// dimension 64). The page's files: served at / with their types, without an
// API key, from the binary (compared with the bundle the build made), from a
// folder (--path), or not at all (--no-webui).
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <regex>
#include <thread>

#include "common/tmp_dir.h"
#include "server/server_process.h"

using namespace oscar::testing;
using Json = nlohmann::json;

namespace {

const std::string kBin = OSCAR_BIN_DIR;
const std::string kModel = std::string(OSCAR_SOURCE_DIR) + "/models/oscar-tiny/oscar-tiny-f16.gguf";
const std::string kDist = OSCAR_WEBUI_DIST;  // "" when the build embedded no bundle

// oscar-tiny's shape and q2_0's row for d = 64 (2 bits x 64 + two f16 scales).
constexpr int kLayers = 6, kHeadsKv = 2, kHeadDim = 64, kQ2RowBytes = 20;

std::vector<std::pair<std::string, std::string>> tiers_env(bool no_hadamard = false) {
  std::vector<std::pair<std::string, std::string>> env = {{"LLAMA_KV_HP_SINK", "4"}, {"LLAMA_KV_HP_RECENT", "8"}};
  if (no_hadamard) env.push_back({"LLAMA_KV_NO_HADAMARD", "1"});
  return env;
}

std::string start(ServerProcess& srv, const oscar::test::TmpDir& dir, std::vector<std::string> extra,
                  std::vector<std::pair<std::string, std::string>> env = tiers_env()) {
  std::vector<std::string> args = {"-m", kModel, "-c", "1024", "-np", "2", "-t", "2", "-ctk", "q2_0", "-ctv", "q2_0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return srv.start(kBin + "/oscar-server", args, dir.file("server.log"), env);
}

class WebuiServing : public ::testing::Test {
 protected:
  oscar::test::TmpDir dir_{"webui-serving"};
};

TEST_F(WebuiServing, RootServesTheBuiltInPageAndItsAssetsWithTypes) {
  ServerProcess srv;
  ASSERT_EQ(start(srv, dir_, {}), "");
  httplib::Client cli("127.0.0.1", srv.port());
  auto res = cli.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  if (kDist.empty()) {
    EXPECT_NE(res->body.find("web UI was not built"), std::string::npos) << res->body;
    GTEST_SKIP() << "this build has no web UI bundle (node/npm missing): only the fallback page was checked";
  }
  EXPECT_EQ(res->body, read_all(kDist + "/index.html"));
  // Every asset index.html names is served byte for byte, with its type.
  std::smatch m;
  std::string html = res->body;
  int n = 0;
  for (std::regex re(R"re((?:src|href)="\.?(/assets/[^"]+)")re"); std::regex_search(html, m, re); html = m.suffix()) {
    const std::string path = m[1];
    auto a = cli.Get(path.c_str());
    ASSERT_TRUE(a) << path;
    EXPECT_EQ(a->status, 200) << path;
    EXPECT_EQ(a->body, read_all(kDist + path)) << path;
    const std::string type = a->get_header_value("Content-Type");
    if (path.ends_with(".js")) {
      EXPECT_EQ(type, "text/javascript; charset=utf-8");
    } else if (path.ends_with(".css")) {
      EXPECT_EQ(type, "text/css; charset=utf-8");
    }
    EXPECT_NE(a->get_header_value("Cache-Control").find("immutable"), std::string::npos);
    ++n;
  }
  EXPECT_GE(n, 2) << "index.html should name the script and the stylesheet";
  auto missing = cli.Get("/assets/none.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto props = cli.Get("/props");
  ASSERT_TRUE(props);
  EXPECT_TRUE(Json::parse(props->body)["webui"].get<bool>());
}

TEST_F(WebuiServing, PageNeedsNoKeyButTheApiDoes) {
  ServerProcess srv;
  ASSERT_EQ(start(srv, dir_, {"--api-key", "k-123"}), "");
  httplib::Client cli("127.0.0.1", srv.port());
  auto page = cli.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(cli.Get("/props")->status, 401);
  EXPECT_EQ(cli.Post("/", "{}", "application/json")->status, 401) << "only GET/HEAD of the page's files are public";
  EXPECT_EQ(cli.Get("/no-such-file.js")->status, 401);
  httplib::Headers auth = {{"Authorization", "Bearer k-123"}};
  EXPECT_EQ(cli.Get("/props", auth)->status, 200);
}

TEST_F(WebuiServing, NoWebuiAnswers404AsLlamaServer) {
  ServerProcess srv;
  ASSERT_EQ(start(srv, dir_, {"--no-webui"}), "");
  httplib::Client cli("127.0.0.1", srv.port());
  auto res = cli.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("File Not Found: /"), std::string::npos) << res->body;
  EXPECT_FALSE(Json::parse(cli.Get("/props")->body)["webui"].get<bool>());
}

TEST_F(WebuiServing, PathServesAFolderInstead) {
  std::filesystem::create_directories(dir_.dir() / "site" / "sub");
  dir_.write("site/index.html", "<p>my own page</p>");
  dir_.write("site/sub/notes.txt", "plain notes");
  dir_.write("secret.txt", "outside the folder");
  ServerProcess srv;
  ASSERT_EQ(start(srv, dir_, {"--path", dir_.file("site"), "--api-key", "k"}), "");
  httplib::Client cli("127.0.0.1", srv.port());
  auto root = cli.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 200);
  EXPECT_EQ(root->body, "<p>my own page</p>");
  auto notes = cli.Get("/sub/notes.txt");
  ASSERT_TRUE(notes);
  EXPECT_EQ(notes->status, 200);
  EXPECT_EQ(notes->body, "plain notes");
  EXPECT_EQ(notes->get_header_value("Content-Type").rfind("text/plain", 0), 0u);
  auto escape = cli.Get("/../secret.txt");
  ASSERT_TRUE(escape);
  EXPECT_NE(escape->status, 200);
  EXPECT_EQ(escape->body.find("outside the folder"), std::string::npos);
  EXPECT_EQ(cli.Get("/missing.html")->status, 401) << "a path that is no file of the folder is API, so needs the key";
}

TEST_F(WebuiServing, PathThatIsNoFolderStopsTheServer) {
  ServerProcess srv;
  const std::string err = start(srv, dir_, {"--path", dir_.file("nope")});
  EXPECT_NE(err.find("--path"), std::string::npos) << err;
}

// After a chat, /props "kv" and each /slots "kv" agree with each other and
// with the cache's layout: positions x layers cells, f16 rows for the tiers,
// q2_0 rows for the rest.
TEST_F(WebuiServing, KvFiguresInPropsAndSlots) {
  ServerProcess srv;
  ASSERT_EQ(start(srv, dir_, {}), "");
  httplib::Client cli("127.0.0.1", srv.port());
  const Json req = {{"messages", {{{"role", "user"}, {"content", "How do I install a package on Debian with apt?"}}}},
                    {"max_tokens", 8}};
  auto chat = cli.Post("/v1/chat/completions", req.dump(), "application/json");
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->status, 200) << chat->body;

  // The reply can arrive before the scheduler publishes the step that made
  // it: read until /slots is idle and the same on both sides of /props.
  Json props, slots;
  for (int i = 0; i < 200; ++i) {
    const Json before = Json::parse(cli.Get("/slots")->body);
    props = Json::parse(cli.Get("/props")->body);
    slots = Json::parse(cli.Get("/slots")->body);
    const bool idle = std::none_of(slots.begin(), slots.end(), [](const Json& s) { return s["is_processing"].get<bool>(); });
    if (idle && before == slots) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const Json& kv = props["kv"];
  EXPECT_EQ(kv["type_k"], "q2_0");
  EXPECT_EQ(kv["type_v"], "q2_0");
  EXPECT_DOUBLE_EQ(kv["bits_per_value_k"].get<double>(), 8.0 * kQ2RowBytes / kHeadDim);
  EXPECT_EQ(kv["sink"], 4);
  EXPECT_EQ(kv["recent"], 8);
  EXPECT_EQ(kv["rotations"], "hadamard");  // q2_0, no rotation tensors in oscar-tiny
  EXPECT_EQ(kv["n_seq"], 2);
  EXPECT_EQ(kv["n_ctx_seq"], 512);

  long long used = 0, f16 = 0, positions = 0;
  for (const Json& s : slots) {
    const Json& u = s["kv"];
    const long long cells = u["sink_cells"].get<long long>() + u["main_cells"].get<long long>() +
                            u["recent_cells"].get<long long>();
    EXPECT_EQ(cells, (long long)s["n_cached"] * kLayers) << s.dump();
    const long long f16_row = 2LL * kHeadDim;  // bytes per head per position
    const long long per_cell_f16 = 2LL * kHeadsKv * f16_row;  // K and V
    EXPECT_EQ(u["bytes_f16_equivalent"].get<long long>(), cells * per_cell_f16) << s.dump();
    EXPECT_EQ(u["bytes_used"].get<long long>(),
              (u["sink_cells"].get<long long>() + u["recent_cells"].get<long long>()) * per_cell_f16 +
                  u["main_cells"].get<long long>() * 2LL * kHeadsKv * kQ2RowBytes)
        << s.dump();
    used += u["bytes_used"].get<long long>();
    f16 += u["bytes_f16_equivalent"].get<long long>();
    positions += s["n_cached"].get<long long>();
  }
  EXPECT_GT(positions, 12) << "the chat should reach past the f16 tiers";
  EXPECT_EQ(kv["bytes_used"].get<long long>(), used);
  EXPECT_EQ(kv["bytes_f16_equivalent"].get<long long>(), f16);
  EXPECT_LT(used, f16);
  EXPECT_GT(kv["bytes_allocated"].get<long long>(), used);
}

TEST_F(WebuiServing, KvFiguresForAnF16CacheWithoutRotations) {
  ServerProcess srv;
  ASSERT_EQ(start(srv, dir_, {"-ctk", "f16", "-ctv", "f16"}, tiers_env(true)), "");
  httplib::Client cli("127.0.0.1", srv.port());
  const Json kv = Json::parse(cli.Get("/props")->body)["kv"];
  EXPECT_EQ(kv["type_k"], "f16");
  EXPECT_DOUBLE_EQ(kv["bits_per_value_k"].get<double>(), 16.0);
  EXPECT_EQ(kv["sink"], 0) << "an f16 cache has no tiers";
  EXPECT_EQ(kv["rotations"], "none");
  EXPECT_EQ(kv["bytes_used"], 0);
}

}  // namespace
