// What a saved slot must agree on with the server restoring it (slot_file.h's
// SlotIdentity), computed once at start-up, and the check that names the
// first thing that differs.
#pragma once

#include <string>

#include "kv/kv_cache.h"
#include "model/model.h"
#include "runtime/rotation_plan.h"
#include "server/slot_file.h"

namespace oscar::server {

// The model's shape, a hash of its GGUF metadata and tensor directory (which
// hold the tokenizer) and of a few bytes of every tensor (so that two
// random-weight models of one shape differ), the rotations K and V rows are
// stored under, and the cache's types, tiers and stores. Cheap: the weights
// themselves are sampled, not read.
SlotIdentity slot_identity(const model::Model& model, const kv::KvCache& cache, const runtime::RotationPlan* rotations);

// "" when a file saved under `saved` can be restored here, else a sentence
// naming what differs ("K cache type: the file has q2_0, this server f16").
std::string identity_mismatch(const SlotIdentity& saved, const SlotIdentity& here);

}  // namespace oscar::server
