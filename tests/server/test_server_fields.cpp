// llama-server's request fields and HTTP details end to end (n choices,
// prompt arrays, logit_bias, n_probs, response_fields, progress, timings,
// prefill, id_slot, cache_prompt, truncation, CORS, public endpoints under
// --api-key, the default seed, --context-shift), through the official OpenAI Node client and raw HTTP.
#include <gtest/gtest.h>

#include "client_test_util.h"

using namespace oscar::testing;

namespace {

class ServerFields : public TinyModelClientSuite<ServerFields> {};

TEST_F(ServerFields, RequestFieldsAndHttpDetails) {
  ServerProcess srv;
  // 4 slots of 256 positions: n up to 4, and a context small enough to fill quickly.
  const std::string err =
      srv.start(kBin + "/oscar-server", {"-m", model(), "-c", "1024", "-np", "4", "-t", "2"}, dir_->file("fields.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("fields.test.mjs", srv, 4, 256);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerFields, PublicEndpointsUnderApiKeyAndDefaultSeed) {
  ServerProcess srv;
  const std::string err = srv.start(
      kBin + "/oscar-server", {"-m", model(), "-c", "512", "-np", "1", "-t", "2", "--api-key", "k-123", "--seed", "42"},
      dir_->file("fields_launch.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("fields_launch.test.mjs", srv, 1, 512, "OSCAR_API_KEY=k-123 OSCAR_SEED=42");
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// One slot of 128 positions, so a generation of 384 tokens shifts several times.
TEST_F(ServerFields, ContextShiftGoesOnPastTheContext) {
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", model(), "-c", "128", "-np", "1", "-t", "2", "--context-shift", "--metrics"},
                                    dir_->file("context_shift.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("context_shift.test.mjs", srv, 1, 128);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
