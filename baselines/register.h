// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Explicit registration of every built-in component (static initialisers
// are dropped by the linker from static libraries, so nothing registers
// itself). A new component adds one line here; see docs/ADDING_A_POLICY.md.

#include "core/policy/registry.h"

namespace moebench {

void register_baselines(Registry& r);

// The process-wide registry with every built-in component.
const Registry& builtin_registry();

}  // namespace moebench
