// Models by name against a loopback server with the Hugging Face URL layout
// (api/models/REPO/refs, api/models/REPO/tree/COMMIT, REPO/resolve/COMMIT/FILE):
// a download with progress lands in the hub cache layout, a cut connection is
// resumed with a Range request, a checksum mismatch is refused, and the cache
// answers offline (a miss names the path it looked in) without a request.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/tmp_dir.h"
#include "core/error.h"
#include "download.h"

namespace fs = std::filesystem;

namespace oscar::tools {
namespace {

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string bytes(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = (char)((i * 2654435761u + seed) >> 13);
  return s;
}

// A tiny stand-in for the hub: one repository, user/repo, with two quants,
// a file whose listed checksum is wrong, and a counter of requests.
class FakeHub {
 public:
  FakeHub(const test::TmpDir& dir) {
    q8_ = bytes(96 * 1024, 1);
    q4_ = bytes(64 * 1024, 2);
    // Checksums as the hub lists them (the LFS oid is the file's SHA-256).
    const std::string q8_sha = sha256_of(dir, "q8", q8_);
    const std::string q4_sha = sha256_of(dir, "q4", q4_);
    const std::string wrong = std::string(64, 'a');
    svr_.Get("/api/models/user/repo/refs", [this](const httplib::Request&, httplib::Response& res) {
      ++requests;
      res.set_content("{\"branches\":[{\"name\":\"main\",\"targetCommit\":\"" + kCommit + "\"}]}", "application/json");
    });
    svr_.Get("/api/models/user/repo/tree/" + kCommit, [=, this](const httplib::Request& req, httplib::Response& res) {
      ++requests;
      EXPECT_EQ(req.get_param_value("recursive"), "true");
      res.set_content("[{\"type\":\"file\",\"path\":\"README.md\",\"oid\":\"" + kCommit + "\"},"
                      "{\"type\":\"file\",\"path\":\"m-Q8_0.gguf\",\"lfs\":{\"oid\":\"" + q8_sha + "\"}},"
                      "{\"type\":\"file\",\"path\":\"m-Q4_K_M.gguf\",\"lfs\":{\"oid\":\"" + q4_sha + "\"}},"
                      "{\"type\":\"file\",\"path\":\"m-BAD.gguf\",\"lfs\":{\"oid\":\"" + wrong + "\"}}]",
                      "application/json");
    });
    svr_.Get(R"(/user/repo/resolve/([0-9a-f]+)/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      ++requests;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ranges.push_back(req.get_header_value("Range"));
      }
      const std::string file = req.matches[2];
      const std::string& body = file == "m-Q8_0.gguf" ? q8_ : q4_;
      if (file != "m-Q8_0.gguf" && file != "m-Q4_K_M.gguf" && file != "m-BAD.gguf") {
        res.status = 404;
        return;
      }
      if (cut_next.exchange(false) && req.ranges.empty()) {
        // Half the file, then the connection drops.
        res.set_content_provider(body.size(), "application/octet-stream",
                                 [&body](size_t offset, size_t, httplib::DataSink& sink) {
                                   if (offset >= body.size() / 2) return false;
                                   sink.write(body.data() + offset, body.size() / 2 - offset);
                                   return true;
                                 });
        return;
      }
      res.set_content(body, "application/octet-stream");  // httplib answers a Range with 206
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    svr_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  const std::string& q8() const { return q8_; }
  const std::string& q4() const { return q4_; }

  std::atomic<int> requests{0};
  std::atomic<bool> cut_next{false};
  std::vector<std::string> ranges;

 private:
  static std::string sha256_of(const test::TmpDir& dir, const std::string& name, const std::string& data) {
    return sha256_file(dir.write(name + ".bin", data));
  }
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::string q8_, q4_;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

struct DownloadTest : ::testing::Test {
  test::TmpDir dir{"download"};
  FakeHub hub{dir};
  CacheDirs dirs{dir.file("llama-cache"), dir.file("hub")};
  Logger log{LogLevel::Warn};
  DownloadOptions opts() {
    DownloadOptions o;
    o.endpoint = hub.endpoint();
    o.retry_delay_ms = 10;
    return o;
  }
};

TEST_F(DownloadTest, DownloadsTheDefaultQuantWithProgressIntoTheHubLayout) {
  DownloadOptions o = opts();
  std::vector<std::pair<size_t, size_t>> seen;
  o.progress = [&](size_t done, size_t total) { seen.emplace_back(done, total); };
  const std::string path = fetch_hf_model("user/repo", "", dirs, o, log);
  // No quant given: Q4_K_M first, as llama.cpp picks.
  const fs::path snap = fs::path(dirs.hf_hub) / "models--user--repo" / "snapshots" / kCommit / "m-Q4_K_M.gguf";
  EXPECT_EQ(path, snap.string());
  EXPECT_EQ(slurp(path), hub.q4());
  EXPECT_TRUE(fs::is_symlink(snap));  // -> ../../blobs/<sha256>
  EXPECT_EQ(slurp((fs::path(dirs.hf_hub) / "models--user--repo" / "refs" / "main").string()), kCommit);
  ASSERT_FALSE(seen.empty());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].first, seen[i - 1].first);
  EXPECT_EQ(seen.back().first, hub.q4().size());
  EXPECT_EQ(seen.back().second, hub.q4().size());
  // The quant tag, case-insensitive.
  EXPECT_EQ(slurp(fetch_hf_model("user/repo:q8_0", "", dirs, opts(), log)), hub.q8());
}

TEST_F(DownloadTest, ResumesACutDownloadWithARangeRequest) {
  hub.cut_next = true;
  const std::string path = fetch_hf_model("user/repo:Q8_0", "", dirs, opts(), log);
  EXPECT_EQ(slurp(path), hub.q8());
  ASSERT_EQ(hub.ranges.size(), 2u);
  EXPECT_EQ(hub.ranges[0], "");
  EXPECT_EQ(hub.ranges[1], "bytes=" + std::to_string(hub.q8().size() / 2) + "-");
}

TEST_F(DownloadTest, KeepsPartialDataAcrossRunsAndResumes) {
  // One try only: the cut leaves the partial file; the next run resumes it.
  DownloadOptions o = opts();
  o.attempts = 1;
  hub.cut_next = true;
  try {
    fetch_hf_model("user/repo", "m-Q8_0.gguf", dirs, o, log);
    FAIL() << "a cut download succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(".downloadInProgress"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(fetch_hf_model("user/repo", "m-Q8_0.gguf", dirs, o, log)), hub.q8());
  ASSERT_EQ(hub.ranges.size(), 2u);
  EXPECT_EQ(hub.ranges[1], "bytes=" + std::to_string(hub.q8().size() / 2) + "-");
}

TEST_F(DownloadTest, RefusesAChecksumMismatch) {
  try {
    fetch_hf_model("user/repo", "m-BAD.gguf", dirs, opts(), log);
    FAIL() << "a file with the wrong checksum was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  // Nothing of it stays in the cache.
  const fs::path blobs = fs::path(dirs.hf_hub) / "models--user--repo" / "blobs";
  if (fs::exists(blobs)) {
    EXPECT_TRUE(fs::is_empty(blobs));
  }
  EXPECT_FALSE(fs::exists(fs::path(dirs.hf_hub) / "models--user--repo" / "snapshots" / kCommit / "m-BAD.gguf"));
}

TEST_F(DownloadTest, OfflineFindsTheCacheWithoutTheNetwork) {
  const std::string online = fetch_hf_model("user/repo:Q8_0", "", dirs, opts(), log);
  const int before = hub.requests.load();
  DownloadOptions o = opts();
  o.offline = true;
  EXPECT_EQ(fetch_hf_model("user/repo:Q8_0", "", dirs, o, log), online);
  EXPECT_EQ(fetch_hf_model("user/repo", "m-Q8_0.gguf", dirs, o, log), online);
  EXPECT_EQ(hub.requests.load(), before);  // not one request
  // A quant that was never downloaded: a clear miss.
  EXPECT_THROW(fetch_hf_model("user/repo:Q4_K_M", "", dirs, o, log), Error);
}

TEST_F(DownloadTest, OfflineMissNamesThePath) {
  DownloadOptions o = opts();
  o.offline = true;
  try {
    fetch_hf_model("user/other", "", dirs, o, log);
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("offline"), std::string::npos) << msg;
    EXPECT_NE(msg.find((fs::path(dirs.hf_hub) / "models--user--other" / "snapshots").string()), std::string::npos) << msg;
  }
  try {
    fetch_url_model(hub.endpoint() + "user/repo/resolve/" + kCommit + "/m-Q8_0.gguf", dirs, o, log);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dirs.llama + "/m-Q8_0.gguf"), std::string::npos) << e.what();
  }
  EXPECT_EQ(hub.requests.load(), 0);
}

TEST_F(DownloadTest, ModelUrlGoesToTheLlamaCacheFolder) {
  const std::string url = hub.endpoint() + "user/repo/resolve/" + kCommit + "/m-Q4_K_M.gguf?download=true";
  const std::string path = fetch_url_model(url, dirs, opts(), log);
  EXPECT_EQ(path, dirs.llama + "/m-Q4_K_M.gguf");
  EXPECT_EQ(slurp(path), hub.q4());
  DownloadOptions o = opts();
  o.offline = true;
  EXPECT_EQ(fetch_url_model(url, dirs, o, log), path);
  // A missing file is a clear error, not a retry loop.
  EXPECT_THROW(fetch_url_model(hub.endpoint() + "user/repo/resolve/x/none.gguf", dirs, opts(), log), Error);
}

TEST(DownloadSettings, CacheFoldersAndEndpointFollowTheEnvironment) {
  auto env = [](std::map<std::string, std::string> m) {
    return [m](const char* k) -> const char* {
      auto it = m.find(k);
      return it == m.end() ? nullptr : it->second.c_str();
    };
  };
  auto d = cache_dirs(env({{"HOME", "/h"}}));
  EXPECT_EQ(d.llama, "/h/.cache/llama.cpp");
  EXPECT_EQ(d.hf_hub, "/h/.cache/huggingface/hub");
  d = cache_dirs(env({{"HOME", "/h"}, {"LLAMA_CACHE", "/c"}}));
  EXPECT_EQ(d.llama, "/c");
  EXPECT_EQ(d.hf_hub, "/c");
  d = cache_dirs(env({{"HOME", "/h"}, {"HF_HOME", "/hf"}, {"XDG_CACHE_HOME", "/x"}}));
  EXPECT_EQ(d.llama, "/x/llama.cpp");
  EXPECT_EQ(d.hf_hub, "/hf/hub");
  EXPECT_EQ(model_endpoint(env({})), "https://huggingface.co/");
  EXPECT_EQ(model_endpoint(env({{"HF_ENDPOINT", "http://127.0.0.1:9"}})), "http://127.0.0.1:9/");
  EXPECT_EQ(model_endpoint(env({{"HF_ENDPOINT", "http://a/"}, {"MODEL_ENDPOINT", "http://b"}})), "http://b/");
}

}  // namespace
}  // namespace oscar::tools
