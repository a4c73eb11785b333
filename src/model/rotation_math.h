// Small dense helpers for OSCAR rotations (d x d, row-major, x' = W x).
#pragma once

#include <vector>

namespace oscar::model {

// max |W W^T - I| over all entries.
double orthogonality_error(const float* w, int d);
// The normalised Walsh-Hadamard matrix of size d (a power of two):
// H[i][j] = (-1)^popcount(i & j) / sqrt(d). Symmetric and orthogonal.
std::vector<float> hadamard_matrix(int d);
bool is_power_of_two(int d);
// y = W x (y must not alias x).
void rotate(const float* w, const float* x, float* y, int d);
// y = W^T x (undoes rotate).
void rotate_back(const float* w, const float* x, float* y, int d);
// x = H x in place for the normalised Hadamard matrix above (d a power of
// two), by the fast Walsh-Hadamard transform: d log2 d additions instead of
// d^2 multiply-adds. H is its own inverse, so this also undoes itself.
void hadamard_transform(float* x, int d);

}  // namespace oscar::model
