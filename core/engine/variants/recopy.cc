// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Fate's code (residency.recopy_from_layer): from this MoE layer on, each
// expert the layer computed on the GPU that stays in the cache share is
// copied again, whole, when the layer's GPU work is done (the code
// dequantises in place and reloads the INT4 weights); until it lands the
// expert is in flight. The engine issues the copies (Engine::recopy_computed).
#include "core/engine/variants/copy_variant.h"

namespace moebench {

namespace {

class Recopy final : public CopyVariant {
 public:
  explicit Recopy(int64_t from) : from_(from) {}
  std::string name() const override { return "recopy"; }
  bool recopies_after(int32_t layer) const override { return layer >= from_; }

 private:
  int64_t from_;
};

}  // namespace

std::unique_ptr<CopyVariant> recopy_variant(const ResidencySpec& r, const HardwareProfile& hw) {
  if (r.recopy_from_layer < 0 || !hw.has_gpu()) return nullptr;
  return std::make_unique<Recopy>(r.recopy_from_layer);
}

}  // namespace moebench
