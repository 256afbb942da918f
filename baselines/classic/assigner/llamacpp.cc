// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// assigner = "llamacpp": llama.cpp's layer-wise execution. With the
// layerwise placement every layer is entirely on the GPU or on the CPU; its
// experts run where the weights are, and CPU and GPU do not overlap inside a
// layer (serialize defaults to true in the preset).
#include "baselines/classic/components.h"
