// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// placement = "none": nothing is on the GPU at the start.
#include "baselines/common/components.h"

namespace moebench {

void NonePlacement::place(const PlacementContext&, std::vector<SlotRef>&) {}

}  // namespace moebench
