// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/engine/variants/attention_path.h"

#include <fmt/format.h>

#include "core/util/error.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

struct AttentionPathMaker {
  const char* name;
  std::unique_ptr<AttentionPath> (*make)();
};

// Every attention path, by name (residency.attention).
const AttentionPathMaker kAttentionPaths[] = {
    {"gpu", gpu_attention_path},
    {"cpu", cpu_attention_path},
    {"gpu-host-kv", host_kv_attention_path},
};

}  // namespace

std::vector<std::string> attention_path_names() {
  std::vector<std::string> v;
  for (const AttentionPathMaker& m : kAttentionPaths) v.push_back(m.name);
  return v;
}

std::unique_ptr<AttentionPath> make_attention_path(const std::string& name) {
  for (const AttentionPathMaker& m : kAttentionPaths) {
    if (name == m.name) return m.make();
  }
  throw Error(fmt::format("strategy.residency.attention: expected one of {}, found \"{}\"",
                          join(attention_path_names(), ", "), name));
}

}  // namespace moebench
