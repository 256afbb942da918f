// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The conversion of JSON-lines routing logs (jsonl_convert.h), its second
// part: a line's routing row. jsonl::Rows turns a line's scores (logits
// routed as the model's router does, or probabilities), expert ids and
// combine weights into one checked row, and counts the probability widths
// the lines give, from which the trace's stored width follows.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/model_spec.h"
#include "core/trace/routing.h"
#include "workloads/convert/jsonl_line.h"

namespace moebench::jsonl {

struct Row {
  bool seen = false;
  std::vector<int32_t> ids;
  std::vector<float> weights;  // k
  std::vector<float> probs;    // k (aligned with ids), E (full width) or empty
};

class Rows {
 public:
  // `line` is where values are read and errors placed; it must outlive this.
  Rows(const ModelSpec& m, const Line& line);

  // The routing row of line `j`.
  Row row_of(const Json& j);
  // The narrowest probability width every row had: 0 (none), k or E.
  int64_t narrowest_width() const;
  // A note when every top-k row's probabilities sum to 1 (they look like
  // renormalised combine weights), else none.
  std::optional<std::string> renormalised_note() const;

 private:
  void ids(const Json& j, Row& row, bool full, bool from_logits) const;
  void weights(const Json& j, Row& row, bool full, const Json* lg, const std::string& lg_key,
               const Json* pr, const std::string& pr_key) const;

  const std::string model_;
  const int64_t E_, k_;
  const RoutingConfig rc_;
  const bool grouped_;  // routing by groups with a selection bias (ids cannot be recomputed)
  const Line& line_;
  RoutingScratch scratch_;
  std::vector<int32_t> rid_;
  std::vector<float> rw_, rp_;
  int64_t widths_[3] = {0, 0, 0};  // rows with no probs, top-k probs, full-width probs
  int64_t topk_rows_ = 0;          // rows with top-k probs
  int64_t topk_sum_one_ = 0;       // those summing to 1 (renormalised?)
};

}  // namespace moebench::jsonl
