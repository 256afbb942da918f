// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/variants/copy_variant.h"

namespace moebench {

namespace {

struct CopyVariantMaker {
  const char* name;
  std::unique_ptr<CopyVariant> (*make)(const ResidencySpec&, const HardwareProfile&);
};

// Every copy variant, by name, in the order they shape a copy: a reduced
// copy's time before a write-back adds its own, the stream last.
const CopyVariantMaker kCopyVariants[] = {
    {"reduced-copies", reduced_copies_variant},
    {"writeback", writeback_variant},
    {"one-stream", one_stream_variant},
    {"recopy", recopy_variant},
};

}  // namespace

std::vector<std::string> copy_variant_names() {
  std::vector<std::string> v;
  for (const CopyVariantMaker& m : kCopyVariants) v.push_back(m.name);
  return v;
}

CopyVariants::CopyVariants(const ResidencySpec& r, const HardwareProfile& hw) {
  for (const CopyVariantMaker& m : kCopyVariants) {
    if (auto v = m.make(r, hw)) v_.push_back(std::move(v));
  }
}

double CopyVariants::copy_ns(TaskKind kind, bool reduced_asked, const CostModel& cost) const {
  Transfer t;
  t.kind = kind;
  CopyRequest r;
  r.kind = kind;
  r.reduced_asked = reduced_asked;
  price(t, r, cost, 0.0);
  return t.duration_ns;
}

std::vector<std::string> CopyVariants::names() const {
  std::vector<std::string> out;
  for (const auto& v : v_) out.push_back(v->name());
  return out;
}

}  // namespace moebench
