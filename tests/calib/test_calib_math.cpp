// Calibration math against an independent NumPy implementation of
// docs/OSCAR.md §5's definitions (calib_ref.py), on small synthetic Q/K/V
// with GQA and a non-isotropic spectrum; plus hand-checked bit reversal and P,
// and the score-SNR accumulator against a direct sum over every causal pair.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../torchio/torchio_test_util.h"
#include "calib/head_stats.h"
#include "calib/rotation_builder.h"
#include "calib/score_snr.h"
#include "core/error.h"
#include "kv/q2_codec.h"

namespace oscar::calib {
namespace {

using namespace oscar::torchio::test;

bool have_numpy() {
  static const bool ok = run_shell(quote(OSCAR_PYTHON) + " -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

// Rows with a planted spectrum: each head's vectors are A·z, z ~ N(0, I),
// A fixed per tensor with spread-out singular values.
std::vector<float> rows(std::mt19937& rng, int n, int heads, int d, float scale) {
  std::normal_distribution<float> N(0.f, 1.f);
  std::vector<float> a((size_t)d * d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) a[(size_t)i * d + j] = N(rng) * scale / (1.0f + (float)j);
  std::vector<float> out((size_t)n * heads * d);
  std::vector<float> z((size_t)d);
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < heads; ++h) {
      for (float& x : z) x = N(rng);
      for (int i = 0; i < d; ++i) {
        float s = 0.3f * (float)h;  // a per-head offset, so heads differ
        for (int j = 0; j < d; ++j) s += a[(size_t)i * d + j] * z[(size_t)j];
        out[((size_t)t * heads + h) * d + i] = s;
      }
    }
  return out;
}

TEST(CalibMath, BitReversalAndPermutationByHand) {
  EXPECT_EQ(bit_reversal(8), (std::vector<int>{0, 4, 2, 6, 1, 5, 3, 7}));
  EXPECT_EQ(bit_reversal(1), (std::vector<int>{0}));
  // Eigenvalues 3,1,4,2: s = (2, 0, 3, 1); br = (0, 2, 1, 3): column br(i) is e_s(i).
  Eigen::VectorXd ev(4);
  ev << 3, 1, 4, 2;
  const Eigen::MatrixXd p = pbr_matrix(ev);
  Eigen::MatrixXd want = Eigen::MatrixXd::Zero(4, 4);
  want(2, 0) = want(0, 2) = want(3, 1) = want(1, 3) = 1;
  EXPECT_EQ(p, want);
  EXPECT_THROW(bit_reversal(12), Error);
  EXPECT_THROW(rotation_from_covariance(Eigen::MatrixXd::Identity(6, 6)), Error);
}

TEST(CalibMath, HadamardIsOrthogonalAndSylvester) {
  const Eigen::MatrixXd h = hadamard(16);
  EXPECT_LT((h * h.transpose() - Eigen::MatrixXd::Identity(16, 16)).cwiseAbs().maxCoeff(), 1e-12);
  // H_2n = [[H, H], [H, -H]] / sqrt(2)
  const Eigen::MatrixXd h8 = hadamard(8);
  EXPECT_LT((h.topLeftCorner(8, 8) - h8 / std::sqrt(2.0)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((h.bottomRightCorner(8, 8) + h8 / std::sqrt(2.0)).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(CalibMath, MatchesNumPyReference) {
  if (!have_numpy()) GTEST_SKIP() << OSCAR_PYTHON << " has no numpy (install python3-numpy)";
  const int n = 300, nh = 4, nkv = 2, d = 16;
  std::mt19937 rng(7);
  const std::vector<float> q = rows(rng, n, nh, d, 1.0f);
  const std::vector<float> k = rows(rng, n, nkv, d, 2.0f);
  const std::vector<float> v = rows(rng, n, nkv, d, 0.5f);

  // Streamed in uneven batches: the statistics must not depend on the split.
  const HeadShape hs{nh, nkv, d};
  QueryStats qs(hs);
  for (int b = 0, step = 7; b < n; b += step, step = step * 3 % 61 + 1) {
    const int m = std::min(step, n - b);
    qs.add(m, &q[(size_t)b * nh * d]);
  }
  ValueStats vs(qs);
  for (int b = 0, step = 50; b < n; b += step) {
    const int m = std::min(step, n - b);
    vs.add(m, &k[(size_t)b * nkv * d], &v[(size_t)b * nkv * d]);
  }
  EXPECT_EQ(qs.tokens(), n);
  const Eigen::MatrixXd ck = qs.c_k(), cv = vs.c_v();
  const LayerRotation rk = rotation_from_covariance(ck), rv = rotation_from_covariance(cv);

  const fs::path dir = temp_dir("calib-math");
  std::vector<uint8_t> in;
  for (int x : {n, nh, nkv, d}) put32(in, (uint32_t)x);
  for (const auto* t : {&q, &k, &v}) {
    auto b = floats_bytes(*t);
    in.insert(in.end(), b.begin(), b.end());
  }
  write_bytes(dir / "in.bin", in);
  const std::string cmd = quote(OSCAR_PYTHON) + " " + quote(std::string(OSCAR_SOURCE_DIR) + "/tests/calib/calib_ref.py") +
                          " " + quote((dir / "in.bin").string()) + " " + quote((dir / "out.bin").string());
  ASSERT_EQ(run_shell(cmd), 0) << cmd;
  const auto ob = read_bytes(dir / "out.bin");
  const size_t dd = (size_t)d * d;
  ASSERT_EQ(ob.size(), (4 * dd + 2 * d) * 8);
  std::vector<double> ref(ob.size() / 8);
  std::memcpy(ref.data(), ob.data(), ob.size());
  const double* r_ck = ref.data();
  const double* r_cv = r_ck + dd;
  const double* r_evk = r_cv + dd;
  const double* r_evv = r_evk + d;
  const double* r_mk = r_evv + d;
  const double* r_mv = r_mk + dd;

  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) {
      EXPECT_NEAR(ck(i, j), r_ck[i * d + j], 1e-9 * (1 + std::fabs(r_ck[i * d + j])));
      EXPECT_NEAR(cv(i, j), r_cv[i * d + j], 1e-9 * (1 + std::fabs(r_cv[i * d + j])));
    }
  for (int i = 0; i < d; ++i) {
    EXPECT_NEAR(rk.eigenvalues[(size_t)i], r_evk[i], 1e-5 * (1 + std::fabs(r_evk[i])));
    EXPECT_NEAR(rv.eigenvalues[(size_t)i], r_evv[i], 1e-5 * (1 + std::fabs(r_evv[i])));
    if (i) {
      EXPECT_LE(rk.eigenvalues[(size_t)i - 1], rk.eigenvalues[(size_t)i]) << "not ascending";
    }
  }
  double worst_k = 0, worst_v = 0;
  for (size_t i = 0; i < dd; ++i) {
    worst_k = std::max(worst_k, std::fabs(rk.m[i] - r_mk[i]));
    worst_v = std::max(worst_v, std::fabs(rv.m[i] - r_mv[i]));
  }
  EXPECT_LT(worst_k, 1e-5);
  EXPECT_LT(worst_v, 1e-5);
  fs::remove_all(dir);
}

// Σ over causal pairs by brute force, the definition of score_snr.h.
struct Direct {
  double signal = 0;
  std::vector<double> noise;
};

TEST(CalibMath, ScoreSnrEqualsDirectPairSum) {
  const int nh = 4, nkv = 2, d = 16, g = 2;
  std::mt19937 rng(3);
  const HeadShape hs{nh, nkv, d};
  std::vector<float> w_rand((size_t)d * d);
  {
    std::normal_distribution<double> N(0, 1);
    Eigen::MatrixXd a(d, d);
    for (int i = 0; i < d * d; ++i) a.data()[i] = N(rng);
    const Eigen::MatrixXd o = Eigen::HouseholderQR<Eigen::MatrixXd>(a).householderQ();
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) w_rand[(size_t)i * d + j] = (float)o(i, j);
  }
  const kv::Q2Params q2{0.9f, 8};
  ScoreSnr snr(hs, {{"none", {}}, {"random", w_rand}}, q2);
  // Two sequences (lengths 37 and 20), each fed in uneven batches.
  Direct direct;
  direct.noise.assign(2, 0.0);
  for (int len : {37, 20}) {
    const std::vector<float> q = rows(rng, len, nh, d, 1.0f), k = rows(rng, len, nkv, d, 1.5f);
    std::vector<int32_t> pos((size_t)len);
    for (int i = 0; i < len; ++i) pos[(size_t)i] = i;
    for (int b = 0, step = 5; b < len; b += step, step += 4) {
      const int m = std::min(step, len - b);
      snr.add(m, &pos[(size_t)b], &q[(size_t)b * nh * d], &k[(size_t)b * nkv * d]);
    }
    // k̃ per mode and key, then every (query head, key ≤ query) pair.
    std::vector<std::vector<float>> kt(2, std::vector<float>(k.size()));
    std::vector<uint8_t> code(kv::q2_row_bytes(d, q2));
    for (int m = 0; m < 2; ++m)
      for (int t = 0; t < len * nkv; ++t) {
        const float* x = &k[(size_t)t * d];
        std::vector<float> r(d), deq(d);
        for (int i = 0; i < d; ++i) {
          double s = 0;
          for (int j = 0; j < d; ++j) s += (m ? w_rand[(size_t)i * d + j] : (i == j)) * x[j];
          r[(size_t)i] = (float)s;
        }
        kv::q2_encode_reference(r.data(), code.data(), d, q2);
        kv::q2_decode(code.data(), deq.data(), d, q2);
        for (int j = 0; j < d; ++j) {
          double s = 0;
          for (int i = 0; i < d; ++i) s += (m ? w_rand[(size_t)i * d + j] : (i == j)) * deq[(size_t)i];
          kt[(size_t)m][(size_t)t * d + j] = (float)s;
        }
      }
    for (int i = 0; i < len; ++i)
      for (int hq = 0; hq < nh; ++hq)
        for (int j = 0; j <= i; ++j) {
          const float* qv = &q[((size_t)i * nh + hq) * d];
          const size_t kr = ((size_t)j * nkv + hq / g) * d;
          double s = 0;
          for (int c = 0; c < d; ++c) s += (double)qv[c] * k[kr + c];
          direct.signal += s * s;
          for (int m = 0; m < 2; ++m) {
            double e = 0;
            for (int c = 0; c < d; ++c) e += (double)qv[c] * (k[kr + c] - kt[(size_t)m][kr + c]);
            direct.noise[(size_t)m] += e * e;
          }
        }
  }
  EXPECT_NEAR(snr.signal(), direct.signal, 1e-4 * direct.signal);
  for (int m = 0; m < 2; ++m) {
    EXPECT_NEAR(snr.noise(m), direct.noise[(size_t)m], 2e-3 * direct.noise[(size_t)m]) << snr.mode_name(m);
    EXPECT_NEAR(snr.snr_db(m), 10 * std::log10(direct.signal / direct.noise[(size_t)m]), 0.01);
  }
  EXPECT_EQ(snr.pairs(), (long long)nh * (37 * 38 / 2 + 20 * 21 / 2));
  // Positions that do not continue the sequence are refused.
  const std::vector<float> q1 = rows(rng, 1, nh, d, 1.0f), k1 = rows(rng, 1, nkv, d, 1.0f);
  const int32_t bad = 5;
  EXPECT_THROW(snr.add(1, &bad, q1.data(), k1.data()), Error);
}

TEST(CalibMath, RefusesBadShapes) {
  EXPECT_THROW(check_shape({6, 4, 64}, 3), Error);
  EXPECT_THROW(check_shape({0, 0, 64}, 0), Error);
  EXPECT_NO_THROW(check_shape({8, 2, 64}, 0));
  Eigen::MatrixXd c = Eigen::MatrixXd::Identity(8, 8);
  c(1, 2) = NAN;
  EXPECT_THROW(rotation_from_covariance(c), Error);
}

}  // namespace
}  // namespace oscar::calib
