// From a covariance C (d×d, symmetric) to the OSCAR rotation M = R·H·P
// (row-vector convention, x' = x·M), as the published checkpoints were made:
//   C = R Λ Rᵀ with Λ ascending (as eigh returns it); the stored eigenvalues
//     are Λ in that ascending order;
//   H = the normalised Walsh–Hadamard matrix, H[i][j] = (-1)^popcount(i&j)/√d;
//   P = the permutation whose column br(i) is e_s(i), s(i) = the index of the
//     i-th largest eigenvalue, br = reversal of the log2(d) bits.
// Eigenvectors are fixed up to sign by eigh; we make the entry of largest
// magnitude of every column of R positive so a run is reproducible (any sign
// choice gives an equally valid rotation).
#pragma once

#include <Eigen/Dense>
#include <vector>

namespace oscar::calib {

struct LayerRotation {
  int dim = 0;
  std::vector<float> m;            // M, row-major d*d (what a checkpoint's `rotation` holds)
  std::vector<float> eigenvalues;  // ascending, d values
};

// Bit reversal of every index 0..d-1 (d a power of two).
std::vector<int> bit_reversal(int d);
// The permutation P for eigenvalues `ev` (any order), as a d×d matrix.
Eigen::MatrixXd pbr_matrix(const Eigen::VectorXd& ev);
Eigen::MatrixXd hadamard(int d);

// Throws oscar::Error when d is not a power of two or C is not finite.
LayerRotation rotation_from_covariance(const Eigen::MatrixXd& c);

}  // namespace oscar::calib
