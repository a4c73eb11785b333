// AVX-512 VNNI entry points of the k-quant dot kernels; the kernels
// are in kquant_dot_avx512_impl.h.
#include "quant/kquant_dot_avx512_impl.h"

namespace oscar::quant {

void dot_q2_K_avx512vnni(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                         float* o, size_t os) {
  dot<DecQ2, true>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q3_K_avx512vnni(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                         float* o, size_t os) {
  dot<DecQ3, true>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q4_K_avx512vnni(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                         float* o, size_t os) {
  dot<DecQ4, true>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q5_K_avx512vnni(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                         float* o, size_t os) {
  dot<DecQ5, true>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q6_K_avx512vnni(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                         float* o, size_t os) {
  dot<DecQ6, true>(n, w, ws, nr, a, as, nc, o, os);
}

}  // namespace oscar::quant
