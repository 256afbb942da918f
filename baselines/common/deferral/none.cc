// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// deferral = "none": every expert's output is combined in its own layer.
#include "baselines/common/components.h"
