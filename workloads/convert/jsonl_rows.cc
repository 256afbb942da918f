// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "workloads/convert/jsonl_rows.h"

#include <cmath>

#include <fmt/format.h>

namespace moebench::jsonl {

Rows::Rows(const ModelSpec& m, const Line& line)
    : model_(m.name),
      E_(m.routed_experts),
      k_(m.top_k),
      rc_(RoutingConfig::from_model(m)),
      grouped_(rc_.n_group > 1 && rc_.topk_group < rc_.n_group),
      line_(line),
      rid_(size_t(k_)),
      rw_(size_t(k_)),
      rp_(size_t(E_)) {}

// The row's expert ids: given, or the top k of full-width scores.
void Rows::ids(const Json& j, Row& row, bool full, bool from_logits) const {
  auto [ex, ex_key] = line_.find(j, "experts");
  if (ex) {
    if (!ex->is_array() || int64_t(ex->size()) != k_) {
      line_.bad(ex_key, fmt::format("an array of {} expert ids (top-{} of {})", k_, k_, model_),
                ex->dump());
    }
    for (const auto& x : *ex) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= E_) {
        line_.bad(ex_key, fmt::format("expert ids in [0, {})", E_), x.dump());
      }
      row.ids.push_back(int32_t(x.get<int64_t>()));
    }
    for (size_t a = 0; a < row.ids.size(); ++a) {
      for (size_t b = 0; b < a; ++b) {
        if (row.ids[a] == row.ids[b]) line_.bad(ex_key, "distinct expert ids", ex->dump());
      }
    }
  } else if (full) {
    if (grouped_) {
      line_.bad(ex_key,
                fmt::format("the chosen experts ({} routes by groups with a selection bias the "
                            "log does not hold, so they cannot be recomputed from probabilities)",
                            model_),
                "no value");
    }
    if (from_logits) {
      row.ids = rid_;
    } else {
      row.ids.resize(size_t(k_));
      top_k_indices(row.probs.data(), E_, k_, nullptr, row.ids.data());
    }
  } else {
    line_.bad(ex_key,
              fmt::format("the {} chosen expert ids, or full-width probs/logits ({} values) to "
                          "take them from",
                          k_, E_),
              "no value");
  }
}

// The row's combine weights: given, the chosen experts' probabilities, or
// taken from full-width scores as the model's router does.
void Rows::weights(const Json& j, Row& row, bool full, const Json* lg, const std::string& lg_key,
                   const Json* pr, const std::string& pr_key) const {
  if (auto [w, w_key] = line_.find(j, "weights"); w) {
    row.weights = line_.numbers(w, w_key, true);
    if (int64_t(row.weights.size()) != k_)
      line_.bad(w_key, fmt::format("{} combine weights", k_), w->dump());
    line_.check_weights(row.weights, w_key, w);
  } else if (int64_t(row.probs.size()) == k_) {
    row.weights = row.probs;  // the chosen experts' probabilities, as the log gives them
    line_.check_weights(row.weights, pr_key, pr);
  } else if (full) {
    double sumw = 0;
    for (int32_t e : row.ids) sumw += row.probs[e];
    for (int32_t e : row.ids) {
      double x = row.probs[e];
      if (rc_.norm_topk_prob && sumw > 0) x /= sumw;
      row.weights.push_back(float(x * rc_.routed_scaling_factor));
    }
    line_.check_weights(row.weights, lg ? lg_key : pr_key, lg ? lg : pr);
  } else {
    line_.bad(w_key, fmt::format("{} combine weights, or probs/logits to take them from", k_),
              "no value");
  }
}

// A line's routing row: its scores (logits routed as the model does, or
// probabilities), expert ids and combine weights.
Row Rows::row_of(const Json& j) {
  Row row;
  row.seen = true;
  auto [lg, lg_key] = line_.find(j, "logits");
  auto [pr, pr_key] = line_.find(j, "probs");
  if (lg) {
    std::vector<float> logits = line_.numbers(lg, lg_key, false);
    if (int64_t(logits.size()) != E_)
      line_.bad(lg_key, fmt::format("{} router logits (every expert of {})", E_, model_),
                lg->dump());
    route(rc_, logits.data(), nullptr, rid_.data(), rw_.data(), rp_.data(), scratch_);
    row.probs = rp_;
  } else if (pr) {
    row.probs = line_.numbers(pr, pr_key, true);
    line_.check_probs(row.probs, pr_key, pr);
    if (int64_t(row.probs.size()) != k_ && int64_t(row.probs.size()) != E_) {
      line_.bad(
          pr_key,
          fmt::format("{} probabilities (the chosen experts') or {} (every expert's)", k_, E_),
          pr->dump());
    }
  }
  const bool full = int64_t(row.probs.size()) == E_ && E_ != k_;
  ids(j, row, full, lg != nullptr);
  weights(j, row, full, lg, lg_key, pr, pr_key);
  ++widths_[row.probs.empty() ? 0 : full ? 2 : 1];
  if (!row.probs.empty() && !full) {
    double z = 0;
    for (float x : row.probs) z += x;
    ++topk_rows_;
    topk_sum_one_ += std::abs(z - 1.0) < 1e-3 ? 1 : 0;
  }
  return row;
}

int64_t Rows::narrowest_width() const {
  return widths_[0] ? 0 : widths_[1] ? k_ : E_;
}

std::optional<std::string> Rows::renormalised_note() const {
  if (!(topk_rows_ > 0 && topk_sum_one_ == topk_rows_ && k_ < E_)) return std::nullopt;
  return fmt::format(
      "the top-{} 'probs' sum to 1 on all {} rows: they look like combine weights "
      "renormalised over the chosen "
      "experts, not router probabilities (which sum to 1 over all {} experts); if "
      "so, map them with --field "
      "weights=KEY instead (the trace then has no probabilities, and MRS or "
      "probability-based predictors are "
      "refused on it rather than fed renormalised weights)",
      k_, topk_rows_, E_);
}

}  // namespace moebench::jsonl
