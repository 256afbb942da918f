// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The provenance only the layers above the core can read: the oneDNN
// version and the CUDA versions and GPUs (kernels/cuda/gpu_query.h). Passed
// to collect_provenance (core/results/provenance.h) by the programs that
// write a manifest.

#include <vector>

#include "core/results/provenance.h"

namespace moebench {

// The oneDNN probe, then the GPU probe.
std::vector<ProvenanceProbe> platform_provenance_probes();

}  // namespace moebench
