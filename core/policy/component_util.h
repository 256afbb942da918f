// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Small helpers shared by component implementations.

#include <string>

#include "core/config/schema.h"

namespace moebench {

// Params of a component without parameters (its TOML table must be empty).
template <class Tag>
struct EmptyParams {
  static const cfg::Schema<EmptyParams>& schema() {
    static const cfg::Schema<EmptyParams> s(Tag::kSection);
    return s;
  }
};

}  // namespace moebench
