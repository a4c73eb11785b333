// The AVX-512 VNNI build of the k-quant dot kernels in
// kquant_dot_avx512_impl.h.
#include "quant/kquant_dot_avx512_impl.h"

namespace oscar::quant {

KQuantDots kquant_dots_avx512vnni() {
  return {dot<DecQ2, true>, dot<DecQ3, true>, dot<DecQ4, true>, dot<DecQ5, true>, dot<DecQ6, true>};
}

}  // namespace oscar::quant
