// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Storage formats of weights, shared by the model specs (core/config) and
// the CPU expert kernels (kernels/cpu).

namespace moebench {

enum class WeightDtype { kBf16, kFp16, kInt8, kInt4 };

// "bf16", "fp16", "int8" or "int4".
const char* to_string(WeightDtype d);

}  // namespace moebench
