// Slots on disk (issue 36): POST /slots/{id}?action=save|restore|erase on a
// q2_0 cache whose sink and recent tiers are small, so the saved slot holds
// real q2_0 blocks. A conversation saved, the server stopped, a new server
// started and the slot restored continues bit-identically (tokens and
// probabilities) to the run that never stopped, with the restored tokens
// counted as cached; corrupt, truncated and mismatched files get a 400
// naming the defect while the server keeps serving; the contract's other
// errors (no --slot-save-path, bad id, unknown action, bad file name) and a
// busy slot (the action waits for it) answer as llama-server does.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "client_test_util.h"
#include "raw_http.h"

using namespace oscar::testing;
using Json = nlohmann::json;

namespace {

struct Answer {
  int status = 0;
  Json body;
};

Answer call(int port, const std::string& method, const std::string& path, const std::string& body = "",
            int timeout_ms = 20000) {
  const std::string req = method == "GET" ? "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" : post_json(path, body);
  const std::string raw = raw_exchange(port, req, timeout_ms);
  Answer a;
  a.status = RawConnection::status(raw);
  const size_t at = raw.find("\r\n\r\n");
  if (at != std::string::npos) a.body = Json::parse(raw.substr(at + 4), nullptr, false);
  return a;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(b.data(), (std::streamsize)b.size());
}

class ServerSlots : public TinyModelSuite<ServerSlots> {
 protected:
  static std::string start(ServerProcess& srv, const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"-m", model(), "-c", "1024", "-np", "2", "-t", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return srv.start(kBin + "/oscar-server", args, dir_->file(name + ".log"));
  }
  // q2_0 with 4 sink and 8 recent positions: a slot of ~60 tokens is mostly q2_0 blocks.
  static std::vector<std::string> q2_flags() {
    return {"-ctk", "q2_0", "-ctv", "q2_0", "--kv-hp-sink", "4", "--kv-hp-recent", "8", "--slot-save-path",
            dir_->file("slots")};
  }
  static Json completion(const Json& prompt, int n_predict) {
    return {{"prompt", prompt}, {"n_predict", n_predict}, {"temperature", 0}, {"cache_prompt", true},
            {"id_slot", 0},    {"return_tokens", true},   {"n_probs", 3},     {"ignore_eos", true}};
  }
};

TEST_F(ServerSlots, SavedQ2SlotContinuesBitIdenticallyAfterARestart) {
  std::vector<int> turn1;
  for (int i = 0; i < 40; ++i) turn1.push_back(10 + (i * 37) % 200);
  // One page pool shared by the slots (restore takes its pages there).
  std::vector<std::string> flags = q2_flags();
  flags.push_back("--kv-unified");
  ServerProcess a;
  ASSERT_EQ(start(a, "a", flags), "");
  const Answer r1 = call(a.port(), "POST", "/completion", completion(turn1, 16).dump());
  ASSERT_EQ(r1.status, 200) << r1.body.dump();
  const std::vector<int> gen1 = r1.body["tokens"].get<std::vector<int>>();
  ASSERT_EQ(gen1.size(), 16u);
  // The slot holds the prompt and every generated token but the last (never evaluated).
  const size_t n_cached = turn1.size() + gen1.size() - 1;
  const Answer slots = call(a.port(), "GET", "/slots");
  ASSERT_EQ(slots.status, 200);
  EXPECT_EQ(slots.body[0]["n_cached"], n_cached);
  EXPECT_GT(slots.body[0]["kv"]["main_cells"].get<int>(), 0) << "no q2_0 blocks in the slot: " << slots.body.dump();

  const Answer saved = call(a.port(), "POST", "/slots/0?action=save", R"({"filename":"conv.bin"})");
  ASSERT_EQ(saved.status, 200) << saved.body.dump();
  EXPECT_EQ(saved.body["id_slot"], 0);
  EXPECT_EQ(saved.body["filename"], "conv.bin");
  EXPECT_EQ(saved.body["n_saved"], n_cached);
  const std::string file = dir_->file("slots/conv.bin");
  EXPECT_EQ(saved.body["n_written"].get<uint64_t>(), std::filesystem::file_size(file));
  EXPECT_TRUE(saved.body["timings"]["save_ms"].is_number());
  // Rows as stored: the 2-bit blocks make it well under the f16 size of the same positions.
  EXPECT_LT(saved.body["n_written"].get<double>(), 0.6 * slots.body[0]["kv"]["bytes_f16_equivalent"].get<double>());

  // The uninterrupted run: the next turn on the same server.
  std::vector<int> turn2 = turn1;
  turn2.insert(turn2.end(), gen1.begin(), gen1.end());
  for (int t : {5, 77, 123, 9}) turn2.push_back(t);
  const Answer ref = call(a.port(), "POST", "/completion", completion(turn2, 24).dump());
  ASSERT_EQ(ref.status, 200) << ref.body.dump();
  EXPECT_EQ(ref.body["timings"]["cache_n"], n_cached);
  EXPECT_EQ(a.stop(), 0) << a.log();

  ServerProcess b;
  ASSERT_EQ(start(b, "b", flags), "");
  const Answer restored = call(b.port(), "POST", "/slots/0?action=restore", R"({"filename":"conv.bin"})");
  ASSERT_EQ(restored.status, 200) << restored.body.dump();
  EXPECT_EQ(restored.body["id_slot"], 0);
  EXPECT_EQ(restored.body["filename"], "conv.bin");
  EXPECT_EQ(restored.body["n_restored"], n_cached);
  EXPECT_EQ(restored.body["n_read"], saved.body["n_written"]);
  EXPECT_TRUE(restored.body["timings"]["restore_ms"].is_number());
  EXPECT_EQ(call(b.port(), "GET", "/slots").body[0]["n_cached"], n_cached);

  const Answer cont = call(b.port(), "POST", "/completion", completion(turn2, 24).dump());
  ASSERT_EQ(cont.status, 200) << cont.body.dump();
  EXPECT_EQ(cont.body["timings"]["cache_n"], n_cached) << "the restored tokens were not reused";
  EXPECT_EQ(cont.body["tokens"], ref.body["tokens"]);
  EXPECT_EQ(cont.body["content"], ref.body["content"]);
  EXPECT_EQ(cont.body["completion_probabilities"], ref.body["completion_probabilities"]);  // bit-identical logits
  EXPECT_EQ(b.stop(), 0) << b.log();
}

TEST_F(ServerSlots, CorruptTruncatedAndForeignFilesAreRefused) {
  ServerProcess a;
  ASSERT_EQ(start(a, "c", q2_flags()), "");
  std::vector<int> prompt;
  for (int i = 0; i < 30; ++i) prompt.push_back(3 + i);
  ASSERT_EQ(call(a.port(), "POST", "/completion", completion(prompt, 8).dump()).status, 200);
  ASSERT_EQ(call(a.port(), "POST", "/slots/0?action=save", R"({"filename":"good.bin"})").status, 200);
  const std::vector<char> good = read_bytes(dir_->file("slots/good.bin"));
  ASSERT_GT(good.size(), 1000u);
  std::vector<char> flipped = good;
  flipped[good.size() / 2] ^= 0x04;
  write_bytes(dir_->file("slots/flipped.bin"), flipped);
  write_bytes(dir_->file("slots/short.bin"), std::vector<char>(good.begin(), good.begin() + (long)good.size() / 3));
  write_bytes(dir_->file("slots/junk.bin"), std::vector<char>(500, 'x'));
  // Not regular files: a FIFO must not block the handler, a folder is no file.
  ASSERT_EQ(::mkfifo(dir_->file("slots/fifo.bin").c_str(), 0644), 0);
  std::filesystem::create_directories(dir_->file("slots/folder.bin"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flipped.bin", "checksum mismatch"}, {"short.bin", "checksum mismatch"}, {"junk.bin", "not an oscar slot file"},
      {"missing.bin", "cannot be opened"}, {"fifo.bin", "not a regular file"}, {"folder.bin", "not a regular file"}};
  for (const auto& [name, says] : cases) {
    const Answer r = call(a.port(), "POST", "/slots/1?action=restore", Json{{"filename", name}}.dump());
    EXPECT_EQ(r.status, 400) << name << ": " << r.body.dump();
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find(says), std::string::npos) << r.body.dump();
    EXPECT_EQ(r.body["error"]["type"], "invalid_request_error");
  }
  // The server serves on, slot 0 still holds its conversation.
  const Answer slots = call(a.port(), "GET", "/slots");
  EXPECT_EQ(slots.body[0]["n_cached"], 30 + 8 - 1);
  EXPECT_EQ(slots.body[1]["n_cached"], 0);
  EXPECT_EQ(call(a.port(), "POST", "/completion", completion(prompt, 4).dump()).status, 200);
  // Erase answers what was cached; the slot is then empty.
  const Answer erased = call(a.port(), "POST", "/slots/0?action=erase");
  EXPECT_EQ(erased.status, 200);
  EXPECT_EQ(erased.body["id_slot"], 0);
  EXPECT_EQ(erased.body["n_erased"], 30 + 4 - 1);
  EXPECT_EQ(call(a.port(), "GET", "/slots").body[0]["n_cached"], 0);
  EXPECT_EQ(a.stop(), 0) << a.log();

  // Another cache type: refused, naming it.
  ServerProcess f16;
  ASSERT_EQ(start(f16, "f16", {"-ctk", "f16", "-ctv", "f16", "--slot-save-path", dir_->file("slots")}), "");
  const Answer r = call(f16.port(), "POST", "/slots/0?action=restore", R"({"filename":"good.bin"})");
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("K cache type (-ctk): the file has q2_0, this server f16"),
            std::string::npos)
      << r.body.dump();
  EXPECT_EQ(f16.stop(), 0) << f16.log();
}

TEST_F(ServerSlots, ErrorsAsLlamaServer) {
  ServerProcess plain;
  ASSERT_EQ(start(plain, "plain", {}), "");
  for (const char* action : {"save", "restore", "erase"}) {
    const Answer r = call(plain.port(), "POST", std::string("/slots/0?action=") + action, R"({"filename":"x.bin"})");
    EXPECT_EQ(r.status, 501) << action;
    EXPECT_EQ(r.body["error"]["type"], "not_supported_error");
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find("--slot-save-path"), std::string::npos);
  }
  EXPECT_EQ(plain.stop(), 0) << plain.log();

  ServerProcess srv;
  ASSERT_EQ(start(srv, "errors", {"--slot-save-path", dir_->file("slots2"), "--api-key", "k1"}), "");
  auto post = [&](const std::string& path, const std::string& body, bool key = true) {
    const std::string raw = raw_exchange(srv.port(), post_json(path, body, key ? "Authorization: Bearer k1\r\n" : ""));
    Answer a;
    a.status = RawConnection::status(raw);
    a.body = Json::parse(raw.substr(raw.find("\r\n\r\n") + 4), nullptr, false);
    return a;
  };
  EXPECT_EQ(post("/slots/0?action=erase", "", false).status, 401);
  EXPECT_EQ(post("/slots/0?action=erase", "").status, 200);
  EXPECT_EQ(post("/slots/2?action=erase", "").body["error"]["message"], "Invalid slot ID");
  EXPECT_EQ(post("/slots/abc?action=erase", "").status, 400);
  EXPECT_EQ(post("/slots/-1?action=erase", "").status, 400);
  EXPECT_EQ(post("/slots/0?action=dance", "").body["error"]["message"], "Invalid action");
  EXPECT_EQ(post("/slots/0", "").status, 400);
  for (const char* name : {"../x.bin", "a/b", "..", ".hidden", "", "a\\\\b"}) {
    const Answer r = post("/slots/0?action=save", Json{{"filename", name}}.dump());
    EXPECT_EQ(r.status, 400) << name;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find("Invalid filename"), std::string::npos) << name;
  }
  EXPECT_EQ(post("/slots/0?action=save", R"({"file":"x"})").status, 400);
  EXPECT_EQ(post("/slots/0?action=save", "not json").status, 400);
  EXPECT_FALSE(std::filesystem::exists(dir_->file("x.bin")));
  EXPECT_EQ(srv.stop(), 0) << srv.log();

  ServerProcess hidden;
  ASSERT_EQ(start(hidden, "noslots", {"--slot-save-path", dir_->file("slots2"), "--no-slots"}), "");
  EXPECT_EQ(call(hidden.port(), "POST", "/slots/0?action=erase").status, 501);
  EXPECT_EQ(hidden.stop(), 0) << hidden.log();
}

// While a slot generates, an action on it waits for the generation to end
// (as llama-server defers it), and the generation is unharmed: the save
// then holds the whole conversation.
TEST_F(ServerSlots, BusySlotIsSavedWhenItsGenerationEnds) {
  const std::string long_model = dir_->file("tiny-32k.gguf");
  ASSERT_EQ(run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --ctx 32768 -o " + long_model).first, 0);
  ServerProcess srv;
  ASSERT_EQ(srv.start(kBin + "/oscar-server",
                      {"-m", long_model, "-c", "32768", "-np", "1", "-t", "2", "--slot-save-path", dir_->file("slots3")},
                      dir_->file("busy.log")),
            "");
  Answer gen;
  std::thread t([&] {
    gen = call(srv.port(), "POST", "/completion",
               R"({"prompt":"hello","n_predict":3000,"ignore_eos":true,"temperature":0})", 60000);
  });
  bool busy = false;
  for (int i = 0; i < 200 && !busy; ++i) {
    busy = call(srv.port(), "GET", "/slots").body[0]["is_processing"] == true;
    if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(busy);
  const Answer r = call(srv.port(), "POST", "/slots/0?action=save", R"({"filename":"busy.bin"})", 60000);
  t.join();
  EXPECT_EQ(gen.status, 200);
  EXPECT_EQ(gen.body["tokens_predicted"], 3000);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  // Every evaluated token: the prompt and all but the last generated one.
  EXPECT_EQ(r.body["n_saved"].get<int>(), gen.body["tokens_evaluated"].get<int>() + 3000 - 1);
  EXPECT_TRUE(std::filesystem::exists(dir_->file("slots3/busy.bin")));
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
