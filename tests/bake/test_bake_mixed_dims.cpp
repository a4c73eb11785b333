// oscar-bake on a model whose layers have different head dims (Gemma 4:
// sliding and global layers): the per-layer dims come from the model config,
// so rotations of 32x32 and 64x64 go to the right layers, and the baked
// model binds exactly the rotations of the source rot-kv GGUF.
#include <gtest/gtest.h>

#include <set>

#include "bake_test_util.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "model/model.h"

namespace oscar::bake::test {
namespace {

TEST(BakeMixedDims, Gemma4RotationsPerLayerHeadDim) {
  if (!tools_built()) GTEST_SKIP() << "oscar-bake / oscar-mkmodel not built in " << OSCAR_BIN_DIR;
  const fs::path dir = temp_dir("bake-mixed");
  const std::string mk = "--arch gemma4 --preset tiny --seed 3 -o ";
  ASSERT_EQ(run_tool("oscar-mkmodel", mk + quote((dir / "base.gguf").string()), dir).status, 0);
  const ToolRun src = run_tool("oscar-mkmodel", mk + quote((dir / "src.gguf").string()) + " --kv-rot random", dir);
  ASSERT_EQ(src.status, 0) << src.err;
  const ToolRun r = run_tool("oscar-bake", "--base " + quote((dir / "base.gguf").string()) + " --from-gguf " +
                                               quote((dir / "src.gguf").string()) + " --out " +
                                               quote((dir / "out.gguf").string()), dir);
  ASSERT_EQ(r.status, 0) << r.err;

  const quant::QuantTable table(detect_cpu());
  const auto want = model::Model::load((dir / "src.gguf").string(), table, Logger::quiet());
  const auto got = model::Model::load((dir / "out.gguf").string(), table, Logger::quiet());
  std::set<int> dims;
  int rotated = 0;
  for (size_t i = 0; i < want->weights().layers.size(); ++i) {
    const auto& w = want->weights().layers[i];
    const auto& g = got->weights().layers[i];
    const int d = want->config().layers[i].head_dim;
    EXPECT_EQ(g.k_rot, w.k_rot) << "layer " << i;
    EXPECT_EQ(g.v_rot, w.v_rot) << "layer " << i;
    if (!w.k_rot.empty()) {
      ++rotated;
      dims.insert(d);
      EXPECT_EQ(w.k_rot.size(), (size_t)d * d) << "layer " << i;
    }
  }
  EXPECT_GT(rotated, 0);
  EXPECT_GE(dims.size(), 2u) << "the tiny gemma4 preset should mix head dims";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace oscar::bake::test
