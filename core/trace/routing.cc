// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/trace/routing.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/util/detmath.h"
#include "core/util/error.h"
#include "core/util/lanes16.h"

namespace moebench {

namespace {

// (value, id) order: higher value first, equal values by lower id. Because
// it is a total order on distinct ids, the top-k set does not depend on the
// order candidates are offered in.
inline bool better(float v, int32_t id, float w, int32_t jd) {
  return v > w || (v == w && id < jd);
}

// Running top-k: values kept sorted next to their ids (no indirect loads).
struct TopK {
  int64_t k, have = 0;
  float vals[64];
  int32_t* ids;
  void offer(float v, int32_t id) {
    if (have == k && !better(v, id, vals[k - 1], ids[k - 1])) return;
    int64_t pos = have < k ? have : k - 1;
    while (pos > 0 && better(v, id, vals[pos - 1], ids[pos - 1])) {
      vals[pos] = vals[pos - 1];
      ids[pos] = ids[pos - 1];
      --pos;
    }
    vals[pos] = v;
    ids[pos] = id;
    if (have < k) ++have;
  }
};

// Offers x[begin..end) except the ids in skip[0..nskip) (already offered),
// skipping 16-value chunks with nothing >= the current k-th best.
MOEBENCH_CLONES void scan(TopK& t, const float* x, int64_t begin, int64_t end, const int32_t* skip,
                          int64_t nskip) {
  auto offer = [&](int64_t i) {
    if (t.have == t.k && !better(x[i], int32_t(i), t.vals[t.k - 1], t.ids[t.k - 1])) return;
    for (int64_t q = 0; q < nskip; ++q) {
      if (skip[q] == i) return;
    }
    t.offer(x[i], int32_t(i));
  };
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    if (t.have == t.k) {
      const float kth = t.vals[t.k - 1];
      int any = 0;
      for (int j = 0; j < 16; ++j) any |= x[i + j] >= kth;
      if (!any) continue;
    }
    for (int j = 0; j < 16; ++j) offer(i + j);
  }
  for (; i < end; ++i) offer(i);
}

// Per 16-lane stripe of x[0..n): the best value and its id (lower id on ties).
// In vector form (the scalar loop was not vectorised): selects only, so the
// same values and ids.
MOEBENCH_CLONES void lane_best(const float* x, int64_t n, float* best, int32_t* id) {
  using lanes::i16v;
  using lanes::v16;
  v16 b = v16{} + -3.4e38f;
  i16v d = i16v{} - 1;
  const i16v iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const v16 xv = lanes::load16(x + i);
    const i16v gt = xv > b;
    b = gt ? xv : b;
    d = gt ? iota + int32_t(i) : d;
  }
  lanes::store16(best, b);
  std::memcpy(id, &d, 64);
}

// The set lanes of a comparison mask as bits (lane b -> bit b).
__attribute__((always_inline)) inline uint32_t lane_bits(lanes::i16v m) {
  const lanes::i16v bit = {1,   2,   4,    8,    16,   32,   64,    128,
                           256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  const lanes::i16v x = m & bit;
  uint64_t w[8];
  std::memcpy(w, &x, 64);
  const uint64_t v = ((w[0] | w[1]) | (w[2] | w[3])) | ((w[4] | w[5]) | (w[6] | w[7]));
  return uint32_t(v) | uint32_t(v >> 32);
}

// scan(t, x, 0, n, id, 16) after lane_best's seeds (id[j] = the best of
// stripe j, ids j, j + 16, ...; n a multiple of 16), with the two tests in
// vector form: in a chunk, only lanes >= the k-th best at its start can enter
// (each is then checked against the current k-th best, which only rises), and
// lane j of chunk i was already offered exactly when i + j == id[j]. The
// values are offered in the same order as scan's, so the same top-k results.
MOEBENCH_CLONES void scan_stripes(TopK& t, const float* x, int64_t n, const int32_t* id) {
  using lanes::i16v;
  using lanes::v16;
  i16v seed;
  std::memcpy(&seed, id, 64);
  const i16v iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    i16v want = iota + int32_t(i) != seed;
    if (t.have == t.k) want &= lanes::load16(x + i) >= (v16{} + t.vals[t.k - 1]);
    uint32_t m = lane_bits(want);
    while (m) {
      const int j = __builtin_ctz(m);
      m &= m - 1;
      const int64_t e = i + j;
      if (t.have == t.k && !better(x[e], int32_t(e), t.vals[t.k - 1], t.ids[t.k - 1])) continue;
      t.offer(x[e], int32_t(e));
    }
  }
}

}  // namespace

void top_k_indices(const float* x, int64_t n, int64_t k, const uint8_t* allowed, int32_t* out) {
  if (k > 64) {
    // Large k (statistics over many ranks): stable order by value, then id.
    std::vector<int32_t> idx;
    for (int64_t i = 0; i < n; ++i) {
      if (!allowed || allowed[i]) idx.push_back(int32_t(i));
    }
    std::stable_sort(idx.begin(), idx.end(), [x](int32_t a, int32_t b) { return x[a] > x[b]; });
    std::copy(idx.begin(), idx.begin() + std::min<int64_t>(k, int64_t(idx.size())), out);
    return;
  }
  TopK t{k, 0, {}, out};
  if (allowed) {
    for (int64_t i = 0; i < n; ++i) {
      if (allowed[i]) t.offer(x[i], int32_t(i));
    }
    return;
  }
  if (n >= 64) {
    // Seed with each 16-lane stripe's best: large values early make the
    // threshold high, so few of the rest are inserted.
    float best[16];
    int32_t id[16];
    const int64_t n16 = n - n % 16;
    lane_best(x, n16, best, id);
    for (int j = 0; j < 16; ++j) t.offer(best[j], id[j]);
    scan_stripes(t, x, n16, id);
    scan(t, x, n16, n, nullptr, 0);  // the remainder (ids past the stripes: never seeds)
    return;
  }
  scan(t, x, 0, n, nullptr, 0);
}

namespace {

// 16 lanes in a fixed order keep max and sum deterministic and vectorisable.
MOEBENCH_CLONES void softmax(const float* logits, int64_t n, float* out) {
  float lane_max[16];
  for (int j = 0; j < 16; ++j) lane_max[j] = -3.0e38f;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j)
      lane_max[j] = logits[i + j] > lane_max[j] ? logits[i + j] : lane_max[j];
  }
  for (; i < n; ++i) lane_max[i & 15] = logits[i] > lane_max[i & 15] ? logits[i] : lane_max[i & 15];
  float mx = lane_max[0];
  for (int j = 1; j < 16; ++j) mx = lane_max[j] > mx ? lane_max[j] : mx;
  float part[16] = {0};
  i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) {
      out[i + j] = det::exp(logits[i + j] - mx);
      part[j] += out[i + j];
    }
  }
  for (; i < n; ++i) {
    out[i] = det::exp(logits[i] - mx);
    part[i & 15] += out[i];
  }
  float sum = 0;
  for (float p : part) sum += p;
  const float inv = 1.0f / sum;
  for (int64_t q = 0; q < n; ++q) out[q] = out[q] * inv;
}

// Per group: its best score (DS-V2) or the sum of its best two (DS-V3),
// and the ids of its best two (ties: lower id first).
MOEBENCH_CLONES void group_scores(const float* x, int64_t G, int64_t per, bool top2, float* out,
                                  int32_t* best_ids) {
  for (int64_t g = 0; g < G; ++g) {
    const float* v = x + g * per;
    float b1 = v[0], b2 = -3.4e38f;
    int32_t i1 = int32_t(g * per), i2 = -1;
    for (int64_t i = 1; i < per; ++i) {
      const float y = v[i];
      const int32_t id = int32_t(g * per + i);
      const bool above1 = y > b1, above2 = y > b2;
      // Branch-free update of (best, second best).
      b2 = above1 ? b1 : (above2 ? y : b2);
      i2 = above1 ? i1 : (above2 ? id : i2);
      b1 = above1 ? y : b1;
      i1 = above1 ? id : i1;
    }
    out[g] = top2 && per > 1 ? b1 + b2 : b1;
    best_ids[2 * g] = i1;
    best_ids[2 * g + 1] = i2;
  }
}

MOEBENCH_CLONES void sigmoid_all(const float* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = det::sigmoid(x[i]);
}

void finish_weights(const RoutingConfig& cfg, const float* scores, const int32_t* ids,
                    float* weights) {
  float sum = 0;
  for (int64_t j = 0; j < cfg.top_k; ++j) {
    weights[j] = scores[ids[j]];
    sum += weights[j];
  }
  if (cfg.norm_topk_prob && sum > 0) {
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < cfg.top_k; ++j) weights[j] = weights[j] * inv;
  }
  const float scale = static_cast<float>(cfg.routed_scaling_factor);
  for (int64_t j = 0; j < cfg.top_k; ++j) weights[j] = weights[j] * scale;
}

}  // namespace

void route(const RoutingConfig& cfg, const float* logits, const float* selection_bias, int32_t* ids,
           float* weights, float* probs, RoutingScratch& s) {
  const int64_t E = cfg.experts;
  float* scores = probs;
  switch (cfg.function) {
    case RoutingFunction::kSoftmaxTopK: {
      softmax(logits, E, scores);
      top_k_indices(scores, E, cfg.top_k, nullptr, ids);
      break;
    }
    case RoutingFunction::kSoftmaxGroupLimited:
    case RoutingFunction::kSigmoidGroupedBias: {
      const bool sigmoid = cfg.function == RoutingFunction::kSigmoidGroupedBias;
      if (sigmoid) {
        sigmoid_all(logits, E, scores);
      } else {
        softmax(logits, E, scores);
      }
      const float* select = scores;
      if (selection_bias) {
        s.select.resize(E);
        for (int64_t i = 0; i < E; ++i) s.select[i] = scores[i] + selection_bias[i];
        select = s.select.data();
      }
      const int64_t G = cfg.n_group, per = E / G;
      // Group score: DS-V2 takes the group's best expert, DS-V3 the sum of its best two.
      s.group_score.resize(G);
      float* group_score = s.group_score.data();
      s.groups.resize(2 * G);  // best two ids per group (reused below)
      s.seeds.resize(2 * G);
      group_scores(select, G, per, sigmoid, group_score, s.seeds.data());
      s.groups.resize(cfg.topk_group);
      top_k_indices(group_score, G, cfg.topk_group, nullptr, s.groups.data());
      // Seed with the chosen groups' best two (known from the group scores),
      // then offer the rest of those groups.
      TopK t{cfg.top_k, 0, {}, ids};
      int32_t seeds[128];
      int64_t ns = 0;
      for (int32_t g : s.groups) {
        for (int q = 0; q < 2; ++q) {
          const int32_t id = s.seeds[2 * g + q];
          if (id >= 0 && ns < 128) {
            seeds[ns++] = id;
            t.offer(select[id], id);
          }
        }
      }
      for (int32_t g : s.groups) scan(t, select, g * per, (g + 1) * per, seeds, ns);
      break;
    }
  }
  finish_weights(cfg, scores, ids, weights);
}

// ---------------------------------------------------------------- blocks of 16 tokens

namespace {

using lanes::i16v;
using lanes::load16;
using lanes::store16;
using lanes::v16;

constexpr float kInf = std::numeric_limits<float>::infinity();
// Below every score (scores are >= 0) but not -inf, so a hidden entry (-inf)
// never qualifies in a lane whose top-k is not full yet.
constexpr float kLowest = std::numeric_limits<float>::lowest();

// det::exp on 16 lanes, operation for operation.
__attribute__((always_inline)) inline v16 exp16(v16 x) {
  const float kHi = 88.3762626647949f, kLo = -87.3365447505531f, kMagic = 12582912.0f;
  x = x > kHi ? kHi : x;
  x = x < kLo ? kLo : x;
  const v16 n = (x * 1.44269504088896341f + kMagic) - kMagic;
  v16 r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  v16 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const v16 y = p * (r * r) + r + 1.0f;
  const i16v e = __builtin_convertvector(n, i16v) + 127;
  v16 scale;
  const i16v bits = e << 23;
  std::memcpy(&scale, &bits, 64);
  return y * scale;
}

// Scores of 16 tokens: softmax over experts (per lane) or sigmoid.
MOEBENCH_CLONES void block_scores(const float* logits, int64_t E, bool sigmoid, float* scores) {
  if (sigmoid) {
    for (int64_t e = 0; e < E; ++e)
      store16(scores + e * 16, 1.0f / (1.0f + exp16(-load16(logits + e * 16))));
    return;
  }
  v16 mx = load16(logits);
  for (int64_t e = 1; e < E; ++e) {
    const v16 x = load16(logits + e * 16);
    mx = x > mx ? x : mx;
  }
  v16 sum = {0};
  for (int64_t e = 0; e < E; ++e) {
    const v16 p = exp16(load16(logits + e * 16) - mx);
    store16(scores + e * 16, p);
    sum = sum + p;
  }
  const v16 inv = 1.0f / sum;
  for (int64_t e = 0; e < E; ++e) store16(scores + e * 16, load16(scores + e * 16) * inv);
}

// Per group and lane: best score (or sum of the best two) and the best two ids.
MOEBENCH_CLONES void block_group_scores(const float* x, int64_t G, int64_t per, bool top2,
                                        float* gscore, int32_t* gid) {
  for (int64_t g = 0; g < G; ++g) {
    const float* v = x + g * per * 16;
    v16 b1 = load16(v), b2 = v16{} - 3.4e38f;
    i16v i1 = i16v{} + int32_t(g * per), i2 = i16v{} - 1;
    for (int64_t i = 1; i < per; ++i) {
      const v16 y = load16(v + i * 16);
      const i16v id = i16v{} + int32_t(g * per + i);
      const auto above1 = y > b1, above2 = y > b2;
      b2 = above1 ? b1 : (above2 ? y : b2);
      i2 = above1 ? i1 : (above2 ? id : i2);
      b1 = above1 ? y : b1;
      i1 = above1 ? id : i1;
    }
    store16(gscore + g * 16, top2 && per > 1 ? b1 + b2 : b1);
    std::memcpy(gid + (g * 2) * 16, &i1, 64);
    std::memcpy(gid + (g * 2 + 1) * 16, &i2, 64);
  }
}

// Per lane, the topk_group best groups (higher score first, lower id on
// ties, as top_k_indices): a group is chosen when fewer than topk_group
// groups rank above it. pen[g][b] = 0 where lane b may pick from group g,
// +inf where it may not.
MOEBENCH_CLONES void block_choose_groups(const float* gscore, int64_t G, int64_t topk_group,
                                         float* pen) {
  const v16 inf = v16{} + kInf, zero = {};
  for (int64_t g = 0; g < G; ++g) {
    const v16 x = load16(gscore + g * 16);
    i16v rank = {};
    for (int64_t h = 0; h < G; ++h) {
      const v16 y = load16(gscore + h * 16);
      rank -= h < g ? (y >= x) : (y > x);  // a true comparison is -1
    }
    store16(pen + g * 16, rank < int32_t(topk_group) ? zero : inf);
  }
}

// Per lane of 16 stripes of 16 experts: best score and id (lower id on ties).
MOEBENCH_CLONES void block_lane_best(const float* x, int64_t E, float* best, int32_t* id) {
  // best/id are [16 stripes][16 lanes]; stripe j covers experts j, j+16, ...
  for (int j = 0; j < 16 * 16; ++j) {
    best[j] = -3.4e38f;
    id[j] = -1;
  }
  for (int64_t e = 0; e + 16 <= E; e += 16) {
    for (int j = 0; j < 16; ++j) {
      for (int b = 0; b < 16; ++b) {
        const float y = x[(e + j) * 16 + b];
        const bool above = y > best[j * 16 + b];
        best[j * 16 + b] = above ? y : best[j * 16 + b];
        id[j * 16 + b] = above ? int32_t(e + j) : id[j * 16 + b];
      }
    }
  }
}

// Runs the 16 lanes' top-k selections over every expert row of x ([E][16]),
// group by group (per = experts per group). pen[g][b] is 0 where lane b may
// pick from group g and +inf where it may not. A lane's threshold is its
// current k-th best (or kLowest while it has fewer than k); rows are checked
// four at a time with vector compares and only qualifying lanes of
// qualifying rows are visited. Entries already offered (seeds) must have been
// hidden as -inf by the caller.
MOEBENCH_CLONES void scan_rows(TopK* t, const float* x, int64_t E, int64_t per, const float* pen,
                               int valid) {
  float kth[16];
  for (int b = 0; b < 16; ++b) {
    kth[b] = b >= valid ? kInf : t[b].have == t[b].k ? t[b].vals[t[b].k - 1] : kLowest;
  }
  const int64_t G = E / per;
  for (int64_t g = 0; g < G; ++g) {
    float thr[16];
    for (int b = 0; b < 16; ++b) thr[b] = pen[g * 16 + b] > 0.0f ? kInf : kth[b];
    for (int64_t e = g * per, end = (g + 1) * per; e < end;) {
      const int64_t n = std::min<int64_t>(4, end - e);
      const v16 th = load16(thr);
      i16v m = {};
      for (int64_t q = 0; q < n; ++q) m |= load16(x + (e + q) * 16) >= th;
      if (lane_bits(m) != 0) {
        for (int64_t q = 0; q < n; ++q) {
          const float* row = x + (e + q) * 16;
          // Lanes >= valid have threshold +inf and never appear here.
          for (uint32_t bits = lane_bits(load16(row) >= load16(thr)); bits != 0; bits &= bits - 1) {
            const int b = __builtin_ctz(bits);
            t[b].offer(row[b], int32_t(e + q));
            if (t[b].have == t[b].k) thr[b] = kth[b] = t[b].vals[t[b].k - 1];
          }
        }
      }
      e += n;
    }
  }
}

}  // namespace

void route_block(const RoutingConfig& cfg, const float* logits, int valid, int32_t* const* ids,
                 float* const* weights, float* const* probs, RoutingScratch& s) {
  const int64_t E = cfg.experts, k = cfg.top_k;
  const bool sigmoid = cfg.function == RoutingFunction::kSigmoidGroupedBias;
  s.block_scores.resize(E * 16);
  float* sc = s.block_scores.data();
  block_scores(logits, E, sigmoid, sc);
  TopK t[16];
  for (int b = 0; b < 16; ++b) t[b] = TopK{k, 0, {}, b < valid ? ids[b] : nullptr};
  // Seeds are offered first, then hidden (-inf) during the scan so they are
  // not offered twice, and restored before the weights are read.
  constexpr float kHidden = -kInf;
  auto& saved = s.saved;
  saved.clear();
  auto seed = [&](int b, int32_t id) {
    if (id < 0) return;
    const int64_t at = int64_t(id) * 16 + b;
    if (sc[at] == kHidden) return;  // already seeded
    t[b].offer(sc[at], id);
    saved.push_back({at, sc[at]});
    sc[at] = kHidden;
  };
  if (cfg.function == RoutingFunction::kSoftmaxTopK) {
    s.pen.assign(16, 0.0f);
    if (E >= 64 && E % 16 == 0) {
      // Seed every lane with its 16 stripes' best (stripe j: experts j, j+16, ...).
      s.block_aux.resize(256);
      s.block_ids.resize(256);
      block_lane_best(sc, E, s.block_aux.data(), s.block_ids.data());
      for (int b = 0; b < valid; ++b) {
        for (int j = 0; j < 16; ++j) seed(b, s.block_ids[j * 16 + b]);
      }
    }
    scan_rows(t, sc, E, E, s.pen.data(), valid);
  } else {
    const int64_t G = cfg.n_group, per = E / G;
    s.block_aux.resize(G * 16);
    s.block_ids.resize(2 * G * 16);
    s.pen.resize(G * 16);
    block_group_scores(sc, G, per, sigmoid, s.block_aux.data(), s.block_ids.data());
    block_choose_groups(s.block_aux.data(), G, cfg.topk_group, s.pen.data());
    // Seed each lane with its chosen groups' best two.
    for (int b = 0; b < valid; ++b) {
      for (int64_t g = 0; g < G; ++g) {
        if (s.pen[g * 16 + b] > 0.0f) continue;
        for (int q = 0; q < 2; ++q) seed(b, s.block_ids[(g * 2 + q) * 16 + b]);
      }
    }
    scan_rows(t, sc, E, per, s.pen.data(), valid);
  }
  for (const auto& x : saved) sc[x.at] = x.v;
  const float scale = static_cast<float>(cfg.routed_scaling_factor);
  for (int b = 0; b < valid; ++b) {
    float sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      weights[b][j] = sc[ids[b][j] * 16 + b];
      sum += weights[b][j];
    }
    if (cfg.norm_topk_prob && sum > 0) {
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < k; ++j) weights[b][j] = weights[b][j] * inv;
    }
    for (int64_t j = 0; j < k; ++j) weights[b][j] = weights[b][j] * scale;
  }
  if (probs) lanes::unpack(sc, E, valid, probs);
}

}  // namespace moebench
