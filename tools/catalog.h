// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The process-wide component registry with every built-in component.

#include "core/policy/registry.h"

namespace moebench::tools {

const Registry& component_catalog();

}  // namespace moebench::tools
