#include "calib/rotation_builder.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace oscar::calib {

namespace {

void require_pow2(int d) {
  require(d > 0 && (d & (d - 1)) == 0,
          "head dim " + std::to_string(d) + " is not a power of two (the Hadamard/bit-reversal factors need one)");
}

}  // namespace

std::vector<int> bit_reversal(int d) {
  require_pow2(d);
  const int bits = std::countr_zero((unsigned)d);
  std::vector<int> br((size_t)d);
  for (int i = 0; i < d; ++i) {
    int r = 0;
    for (int b = 0; b < bits; ++b)
      if (i & (1 << b)) r |= 1 << (bits - 1 - b);
    br[(size_t)i] = r;
  }
  return br;
}

Eigen::MatrixXd hadamard(int d) {
  require_pow2(d);
  const double s = 1.0 / std::sqrt((double)d);
  Eigen::MatrixXd h(d, d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) h(i, j) = (std::popcount((unsigned)(i & j)) & 1) ? -s : s;
  return h;
}

Eigen::MatrixXd pbr_matrix(const Eigen::VectorXd& ev) {
  const int d = (int)ev.size();
  const std::vector<int> br = bit_reversal(d);
  // s(i): index of the i-th largest eigenvalue (ties keep index order).
  std::vector<int> s((size_t)d);
  std::iota(s.begin(), s.end(), 0);
  std::stable_sort(s.begin(), s.end(), [&](int a, int b) { return ev(a) > ev(b); });
  Eigen::MatrixXd p = Eigen::MatrixXd::Zero(d, d);
  for (int i = 0; i < d; ++i) p(s[(size_t)i], br[(size_t)i]) = 1.0;
  return p;
}

LayerRotation rotation_from_covariance(const Eigen::MatrixXd& c) {
  const int d = (int)c.rows();
  require(c.cols() == d, "covariance is not square");
  require_pow2(d);
  require(c.allFinite(), "covariance holds non-finite values (did the model produce NaN/inf activations?)");
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(c);
  require(es.info() == Eigen::Success, "eigendecomposition did not converge");
  Eigen::MatrixXd r = es.eigenvectors();  // columns, eigenvalues ascending
  for (int j = 0; j < d; ++j) {
    Eigen::Index at = 0;
    r.col(j).cwiseAbs().maxCoeff(&at);
    if (r(at, j) < 0) r.col(j) = -r.col(j);
  }
  const Eigen::VectorXd ev = es.eigenvalues();
  const Eigen::MatrixXd m = r * hadamard(d) * pbr_matrix(ev);
  LayerRotation out;
  out.dim = d;
  out.m.resize((size_t)d * d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) out.m[(size_t)i * d + j] = (float)m(i, j);
  out.eigenvalues.resize((size_t)d);
  for (int i = 0; i < d; ++i) out.eigenvalues[(size_t)i] = (float)ev(i);
  return out;
}

}  // namespace oscar::calib
