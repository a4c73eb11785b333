// The AVX-512 (F/BW/VL/DQ) build of the k-quant dot kernels in
// kquant_dot_avx512_impl.h.
#include "quant/kquant_dot_avx512_impl.h"

namespace oscar::quant {

KQuantDots kquant_dots_avx512() {
  return {dot<DecQ2, false>, dot<DecQ3, false>, dot<DecQ4, false>, dot<DecQ5, false>, dot<DecQ6, false>};
}

}  // namespace oscar::quant
