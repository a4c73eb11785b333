// The CPU features the engine reads against what the runner says the CPU
// has: scripts/test-arm64.sh runs this under QEMU as a Cortex-A53 (no dot
// product) and as a Neoverse-N1 (dot product and fp16), and says which in
// OSCAR_EXPECT_ARM_DOTPROD, so the kernel tests that follow are known to
// have chosen the sets the emulated CPU allows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/cpu_features.h"

namespace oscar {
namespace {

TEST(CpuFeatures, ArmHwcapsAreWhatTheEmulatedCpuHas) {
  const char* want = std::getenv("OSCAR_EXPECT_ARM_DOTPROD");
  if (!want) GTEST_SKIP() << "OSCAR_EXPECT_ARM_DOTPROD not set (scripts/test-arm64.sh sets it)";
  const CpuFeatures f = detect_cpu();
  EXPECT_TRUE(f.neon);
  EXPECT_EQ(f.arm_dotprod, std::string(want) == "1");
  EXPECT_EQ(f.arm_fp16, std::string(want) == "1");  // both CPUs QEMU is asked for have both or neither
  EXPECT_NE(f.describe().find("neon"), std::string::npos) << f.describe();
}

TEST(CpuFeatures, DescribeNamesWhatIsThere) {
  CpuFeatures f;
  EXPECT_EQ(f.describe(), "scalar");
  f.neon = f.arm_dotprod = f.arm_fp16 = true;
  EXPECT_EQ(f.describe(), "neon dotprod fp16");
}

}  // namespace
}  // namespace oscar
