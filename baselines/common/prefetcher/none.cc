// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// prefetcher = "none": nothing is loaded ahead of need.
#include "baselines/common/components.h"
