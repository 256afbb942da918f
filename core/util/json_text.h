// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// JSON text for files and hashes. nlohmann's dump() throws on a string that is
// not UTF-8 (a path with byte 0xFF once ended run_suite with "internal error"
// and a locked run folder without a manifest): every result file, manifest,
// trace header and identity hash moebench writes goes through json_text(),
// where such a byte becomes U+FFFD instead.

#include <string>

namespace moebench {

template <class Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace moebench
