// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// Small string helpers used by error messages and writers.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace moebench {

// Optimal-string-alignment edit distance (insert, delete, substitute, swap
// of adjacent characters), case-sensitive.
int edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` by edit distance, or "" when none is close
// enough to be a plausible typo (distance <= max(2, |name| / 3)). Ties go to
// the earlier candidate, so results are deterministic.
std::string closest_name(std::string_view name, std::span<const std::string> candidates);

// "a, b, c" (each item optionally quoted with single quotes).
std::string join(std::span<const std::string> items, std::string_view sep = ", ",
                 bool quote = false);

// Splits on a single character; keeps empty fields.
std::vector<std::string> split(std::string_view s, char sep);

bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string trim(std::string_view s);

// The offset of the first byte of `s` that is not part of well-formed UTF-8
// (overlong forms, surrogates and code points past U+10FFFF included), or
// std::string_view::npos when every byte is.
size_t invalid_utf8_at(std::string_view s);

// `s` for an error message or a result file: valid UTF-8 kept, control
// characters and every byte of malformed UTF-8 escaped (\xe9), cut at
// `max_bytes` of input with "..." after. The result is always valid UTF-8.
std::string shown_text(std::string_view s, size_t max_bytes = 80);

}  // namespace moebench
