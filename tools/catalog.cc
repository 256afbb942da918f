// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "tools/catalog.h"

#include "baselines/register.h"

namespace moebench::tools {

const Registry& component_catalog() {
  return builtin_registry();
}

}  // namespace moebench::tools
