// Placeholder so the table links while this family is being written.
#include "quant/quant.h"

namespace oscar::quant {
void register_legacy_types(QuantTraits*, bool*, const CpuFeatures&) {}
}  // namespace oscar::quant
