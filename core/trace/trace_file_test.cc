// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <cstring>

#include <chrono>
#include <fstream>
#include <functional>
#include <limits>
#include <thread>

#include <gtest/gtest.h>

#include "core/testing/temp_dir.h"
#include "core/trace/memory_source.h"
#include "core/trace/safetensors.h"
#include "core/trace/trace.h"
#include "core/util/error.h"
#include "core/util/paths.h"

namespace moebench {
namespace {

// 2 sequences (2+1 and 1+2 tokens), 2 layers, 4 experts, top-2, H = 4.
MemoryTraceSource small_source() {
  TraceInfo info;
  info.model_name = "tiny";
  info.model_hash = "h";
  info.moe_layers = 2;
  info.h_trace = 4;
  info.routing.experts = 4;
  info.routing.top_k = 2;
  info.probs = ProbsStorage::kFull;
  info.sequences = {{2, 1}, {1, 2}};
  info.source = R"({"test":true})";
  MemoryTraceSource m(info);
  int n = 0;
  for (int s = 0; s < 2; ++s) {
    for (int t = 0; t < 3; ++t, ++n) {
      TokenRecord r;
      for (int l = 0; l < 2; ++l) {
        r.ids.push_back((n + l) % 4);
        r.ids.push_back((n + l + 1) % 4);
        r.weights.push_back(0.75f);
        r.weights.push_back(0.25f);
        for (int e = 0; e < 4; ++e)
          r.probs.push_back(e == (n + l) % 4 ? 0.5f : e == (n + l + 1) % 4 ? 0.25f : 0.125f);
        for (int i = 0; i < 4; ++i)
          r.gate_input.push_back(0.5f * float(n) - float(i) + 0.25f * float(l));
      }
      m.add(s, r);
    }
  }
  GateWeights g;
  g.layers = 2;
  g.experts = 4;
  g.h = 4;
  for (int i = 0; i < 32; ++i) g.weight.push_back(float(i) * 0.125f);
  g.bias.assign(8, 0.5f);
  g.selection_bias.assign(8, 0.0f);
  m.set_gate_weights(g);
  return m;
}

TEST(TraceFile, RoundTripsEveryField) {
  testing::TempDir dir;
  const MemoryTraceSource src = small_source();
  write_trace(src, dir / "t.safetensors", {});
  auto back = open_trace_file(dir / "t.safetensors");
  const TraceInfo& in = back->info();
  EXPECT_EQ(in.model_name, "tiny");
  EXPECT_EQ(in.moe_layers, 2);
  EXPECT_EQ(in.experts(), 4);
  EXPECT_EQ(in.top_k(), 2);
  EXPECT_EQ(in.h_trace, 4);
  EXPECT_EQ(in.probs, ProbsStorage::kFull);
  ASSERT_EQ(in.sequences.size(), 2u);
  EXPECT_EQ(in.sequences[1].decode_len, 2);
  EXPECT_EQ(in.source, R"({"test":true})");
  ASSERT_NE(back->gate_weights(), nullptr);
  EXPECT_EQ(back->gate_weights()->weight, src.gate_weights()->weight);
  for (int s = 0; s < 2; ++s) {
    auto a = src.open(s, kAllFields);
    auto b = back->open(s, kAllFields);
    TokenRecord ra, rb;
    while (a->next(ra)) {
      ASSERT_TRUE(b->next(rb));
      EXPECT_EQ(ra.ids, rb.ids);
      EXPECT_EQ(ra.weights, rb.weights);
      EXPECT_EQ(ra.probs, rb.probs);            // exactly representable in f16
      EXPECT_EQ(ra.gate_input, rb.gate_input);  // exactly representable in f16
      EXPECT_EQ(ra.pos, rb.pos);
    }
    EXPECT_FALSE(b->next(rb));
  }
}

TEST(TraceFile, TopPStorageKeepsHighestProbabilities) {
  testing::TempDir dir;
  const MemoryTraceSource src = small_source();
  TraceWriteOptions o;
  o.probs = ProbsStorage::kTopP;
  o.top_p = 2;
  o.gate_inputs = false;
  write_trace(src, dir / "t.safetensors", o);
  auto back = open_trace_file(dir / "t.safetensors");
  EXPECT_EQ(back->info().probs, ProbsStorage::kTopP);
  EXPECT_EQ(back->info().h_trace, 0);
  EXPECT_EQ(back->gate_weights(), nullptr);
  auto r = back->open(0, kAllFields);
  TokenRecord rec;
  ASSERT_TRUE(r->next(rec));
  EXPECT_EQ(rec.probs, (std::vector<float>{0.5f, 0.25f, 0, 0, 0, 0.5f, 0.25f, 0}));
  EXPECT_TRUE(rec.gate_input.empty());
}

std::string open_error(const std::filesystem::path& p) {
  try {
    open_trace_file(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "<ok>";
}

// Writes a trace-like file with one tensor replaced.
void write_variant(const std::filesystem::path& p, const std::string& replace, st::DType dt,
                   std::vector<int64_t> shape, const std::vector<uint8_t>& bytes,
                   std::map<std::string, std::string> meta_overrides = {}) {
  std::map<std::string, std::string> meta = {{"format", "moebench-trace"},
                                             {"format_version", "1"},
                                             {"model", "tiny"},
                                             {"model_hash", "h"},
                                             {"moe_layers", "1"},
                                             {"routed_experts", "4"},
                                             {"top_k", "2"},
                                             {"h_trace", "0"},
                                             {"routing", "softmax-topk"},
                                             {"n_group", "1"},
                                             {"topk_group", "1"},
                                             {"norm_topk_prob", "false"},
                                             {"routed_scaling_factor", "1"},
                                             {"source", "{}"}};
  for (const auto& [k, v] : meta_overrides) meta[k] = v;
  std::vector<st::Writer::Spec> specs = {{"topk_ids", st::DType::kI32, {1, 1, 2}},
                                         {"topk_weights", st::DType::kF32, {1, 1, 2}},
                                         {"seq_prompt_len", st::DType::kI32, {1}},
                                         {"seq_decode_len", st::DType::kI32, {1}}};
  for (auto& s : specs) {
    if (s.name == replace) {
      s.dtype = dt;
      s.shape = shape;
    }
  }
  st::Writer w(p, specs, meta);
  const int32_t ids[2] = {1, 3};
  const float wts[2] = {0.6f, 0.4f};
  const int32_t one = 1, zero = 0;
  auto put = [&](const std::string& n, const void* d, size_t sz) {
    w.write_at(n, 0, n == replace ? static_cast<const void*>(bytes.data()) : d,
               n == replace ? bytes.size() : sz);
  };
  put("topk_ids", ids, 8);
  put("topk_weights", wts, 8);
  put("seq_prompt_len", &zero, 4);
  put("seq_decode_len", &one, 4);
  w.commit();
}

std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return {b, b + n};
}

TEST(TraceFile, RejectsBadFilesWithClearMessages) {
  testing::TempDir dir;
  const auto p = dir / "bad.safetensors";
  const std::string f = p.string();

  write_variant(p, "", st::DType::kF32, {}, {});
  EXPECT_EQ(open_error(p), "<ok>");

  const int32_t out_of_range[2] = {1, 4};
  write_variant(p, "topk_ids", st::DType::kI32, {1, 1, 2}, bytes_of(out_of_range, 8));
  EXPECT_EQ(open_error(p),
            f + ": topk_ids[token 0, layer 0]: expected expert ids in [0, 4), found 4");

  const int32_t dup[2] = {2, 2};
  write_variant(p, "topk_ids", st::DType::kI32, {1, 1, 2}, bytes_of(dup, 8));
  EXPECT_EQ(open_error(p),
            f + ": topk_ids[token 0, layer 0]: expected distinct expert ids, found expert 2 twice");

  const float nan_w[2] = {0.5f, std::nanf("")};
  write_variant(p, "topk_weights", st::DType::kF32, {1, 1, 2}, bytes_of(nan_w, 8));
  EXPECT_EQ(
      open_error(p),
      f + ": topk_weights[token 0, layer 0]: expected finite non-negative weights, found nan");

  const float as_float[2] = {1, 3};
  write_variant(p, "topk_ids", st::DType::kF32, {1, 1, 2}, bytes_of(as_float, 8));
  EXPECT_EQ(open_error(p), f + ": tensor 'topk_ids': expected dtype I32, found dtype F32");

  const int32_t three[3] = {1, 2, 3};
  write_variant(p, "topk_ids", st::DType::kI32, {1, 1, 3}, bytes_of(three, 12));
  EXPECT_EQ(open_error(p),
            f + ": tensor 'topk_ids': expected shape [1, 1, 2], found shape [1, 1, 3]");

  const int32_t two = 2;
  write_variant(p, "seq_decode_len", st::DType::kI32, {1}, bytes_of(&two, 4));
  EXPECT_EQ(open_error(p),
            f + ": tensor 'topk_ids': expected shape [2, 1, 2], found shape [1, 1, 2]");

  write_variant(p, "", st::DType::kF32, {}, {}, {{"format", "something-else"}});
  EXPECT_EQ(open_error(p),
            f + ": __metadata__.format: expected 'moebench-trace', found 'something-else'");

  write_variant(p, "", st::DType::kF32, {}, {}, {{"top_k", "five"}});
  EXPECT_EQ(open_error(p),
            f + ": __metadata__.top_k: expected an integer in [1, 4096], found 'five'");

  // Sizes are bounded: routed_experts = 1e9 once made trace stats allocate past 13 GB.
  write_variant(p, "", st::DType::kF32, {}, {}, {{"routed_experts", "1000000000"}});
  EXPECT_EQ(
      open_error(p),
      f + ": __metadata__.routed_experts: expected an integer in [1, 4096], found '1000000000'");
  write_variant(p, "", st::DType::kF32, {}, {}, {{"moe_layers", "99999999999999999999"}});
  EXPECT_EQ(open_error(p), f + ": __metadata__.moe_layers: expected an integer in [1, 1024], found "
                               "'99999999999999999999'");

  // Sequence lengths are summed in 64 bits: INT32_MAX + 1 once wrapped negative
  // and led to an out-of-bounds read (fuzz/regressions/trace/seq-length-int32-overflow).
  const int32_t big = 2147483647;
  write_variant(p, "seq_prompt_len", st::DType::kI32, {1}, bytes_of(&big, 4));
  EXPECT_EQ(open_error(p),
            f + ": tensor 'topk_ids': expected shape [2147483648, 1, 2], found shape [1, 1, 2]");

  EXPECT_EQ(open_error(dir / "missing.safetensors"),
            (dir / "missing.safetensors").string() +
                ": expected a readable safetensors file (a regular file), found no such file");
  // Not a regular file: refused without opening (a FIFO would block, /dev/zero never end).
  EXPECT_EQ(open_error(dir.path()), dir.path().string() +
                                        ": expected a readable safetensors file (a regular file), "
                                        "found a directory");
  EXPECT_EQ(
      open_error("/dev/zero"),
      "/dev/zero: expected a readable safetensors file (a regular file), found a character device");
}

// small_source() written with one change per token record and to the gate
// weights (values a router cannot produce, refused at load).
std::filesystem::path write_changed(const testing::TempDir& dir, const std::string& name,
                                    const std::function<void(int64_t seq, TokenRecord&)>& change,
                                    const std::function<void(GateWeights&)>& change_gates = {}) {
  MemoryTraceSource src = small_source();
  MemoryTraceSource out(src.info());
  for (int s = 0; s < 2; ++s) {
    auto r = src.open(s, kAllFields);
    TokenRecord rec;
    while (r->next(rec)) {
      change(s, rec);
      out.add(s, rec);
    }
  }
  GateWeights g = *src.gate_weights();
  if (change_gates) change_gates(g);
  out.set_gate_weights(g);
  write_trace(out, dir / name, {});
  return dir / name;
}

TEST(TraceFile, ValuesNoRouterProducesAreRefusedAtLoadWithTheirIndex) {
  testing::TempDir dir;
  auto same = [](int64_t, TokenRecord&) {};
  EXPECT_EQ(open_error(write_changed(dir, "ok.safetensors", same)), "<ok>");
  // A router probability of 5.0, and a negative one (token 1 is sequence 0, position 1).
  auto p = write_changed(dir, "p5.safetensors", [](int64_t s, TokenRecord& r) {
    if (s == 0 && r.pos == 1) r.probs[4 + 3] = 5.0f;  // layer 1, expert 3
  });
  EXPECT_EQ(open_error(p), p.string() +
                               ": tensor 'router_probs'[token 1, layer 1, 3]: expected finite "
                               "probabilities in [0, 1], found 5");
  p = write_changed(dir, "pneg.safetensors", [](int64_t s, TokenRecord& r) {
    if (s == 1 && r.pos == 0) r.probs[0] = -0.5f;
  });
  EXPECT_EQ(open_error(p), p.string() +
                               ": tensor 'router_probs'[token 3, layer 0, 0]: expected finite "
                               "probabilities in [0, 1], found -0.5");
  // Every chosen expert of a layer with weight 0 (its output would be 0).
  p = write_changed(dir, "w0.safetensors", [](int64_t s, TokenRecord& r) {
    if (s == 0 && r.pos == 2) r.weights[2] = r.weights[3] = 0.0f;  // layer 1
  });
  EXPECT_EQ(open_error(p),
            p.string() +
                ": topk_weights[token 2, layer 1]: expected at least one positive combine "
                "weight among the top-k, found all zero");
  // Non-finite gate biases (routing recomputed from them is undefined).
  p = write_changed(dir, "bias.safetensors", same,
                    [](GateWeights& g) { g.bias[6] = std::numeric_limits<float>::infinity(); });
  EXPECT_EQ(
      open_error(p),
      p.string() + ": tensor 'gate_bias'[layer 1, expert 2]: expected finite values, found inf");
  p = write_changed(dir, "sel.safetensors", same,
                    [](GateWeights& g) { g.selection_bias[1] = std::nanf(""); });
  EXPECT_EQ(open_error(p),
            p.string() +
                ": tensor 'selection_bias'[layer 0, expert 1]: expected finite values, found nan");
  p = write_changed(dir, "gw.safetensors", same,
                    [](GateWeights& g) { g.weight[21] = std::nanf(""); });
  EXPECT_EQ(open_error(p),
            p.string() +
                ": tensor 'gate_weight'[layer 1, expert 1, 1]: expected finite values, found nan");
  // An infinite gate input too, not only a NaN.
  p = write_changed(dir, "ginf.safetensors", [](int64_t s, TokenRecord& r) {
    if (s == 0 && r.pos == 0) r.gate_input[2] = -std::numeric_limits<float>::infinity();
  });
  EXPECT_EQ(open_error(p),
            p.string() +
                ": tensor 'gate_input'[token 0, layer 0, 2]: expected finite values, found -inf");
}

TEST(TraceFile, NonFiniteGateInputRefusedAtLoadWithItsIndex) {
  testing::TempDir dir;
  MemoryTraceSource src = small_source();
  {
    // Corrupt one gate input value.
    TraceInfo info = src.info();
    MemoryTraceSource bad(info);
    for (int s = 0; s < 2; ++s) {
      auto r = src.open(s, kAllFields);
      TokenRecord rec;
      while (r->next(rec)) {
        if (s == 1 && rec.pos == 1) rec.gate_input[5] = std::nanf("");
        bad.add(s, rec);
      }
    }
    bad.set_gate_weights(*src.gate_weights());
    write_trace(bad, dir / "n.safetensors", {});
  }
  // Refused when the file is opened (routing recomputed from a NaN gate input
  // was undefined behaviour in det::exp; found by make fuzz), naming the
  // tensor and the index: token 4 (sequence 1 starts at token 3), layer 1, 5 - 4 = element 1.
  EXPECT_EQ(open_error(dir / "n.safetensors"),
            (dir / "n.safetensors").string() +
                ": tensor 'gate_input'[token 4, layer 1, 1]: expected finite values, "
                "found nan");
}

// Finite gate inputs and weights whose logits overflow (weights of 7.6e37)
// were routed silently (inf logits, NaN probabilities). Refused at load.
TEST(TraceFile, GateWeightsWhoseLogitsOverflowAreRefusedAtLoad) {
  testing::TempDir dir;
  MemoryTraceSource src = small_source();
  GateWeights g = *src.gate_weights();
  g.weight[size_t((1 * 4 + 2) * 4 + 3)] = 2e38f;  // layer 1, expert 2: x 3.75 overflows
  src.set_gate_weights(g);
  write_trace(src, dir / "o.safetensors", {});
  const std::string err = open_error(dir / "o.safetensors");
  EXPECT_NE(err.find("tensor 'gate_weight'[layer 1, expert 2]: expected weights whose logits stay "
                     "finite on the trace's gate inputs"),
            std::string::npos)
      << err;
  g.weight[size_t((1 * 4 + 2) * 4 + 3)] = 7.6e30f;  // large, but its logits stay finite
  src.set_gate_weights(g);
  write_trace(src, dir / "ok.safetensors", {});
  EXPECT_EQ(open_error(dir / "ok.safetensors"), "<ok>");
}

// A trace cut short while it is read (truncate, an in-place copy) once
// ended the process with SIGBUS from the memory map, and one zeroed in place
// gave a case "ok" with another hit rate. A read past the new end is an Error
// naming the file; any change since it was opened is reported by
// changed_since_open(), which run_case turns into the case's error.
TEST(TraceFile, AFileCutShortOrWrittenUnderTheReaderIsReportedNotACrash) {
  testing::TempDir dir;
  const auto p = dir / "t.safetensors";
  write_trace(small_source(), p, {});
  {
    auto src = open_trace_file(p);
    EXPECT_EQ(src->changed_since_open(), "");
    EXPECT_EQ(src->file_stamp(), file_stamp(p));
    std::filesystem::resize_file(p, 0);  // every page of the map now lies past the end
    auto r = src->open(1, kAllFields);
    TokenRecord rec;
    try {
      r->next(rec);
      ADD_FAILURE() << "a read past the file's new end returned";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string() + ": expected the file to stay as it was "
                                                        "while it is read, found it cut short"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("0 bytes now"), std::string::npos) << e.what();
    }
    EXPECT_NE(src->changed_since_open().find("its size went from"), std::string::npos)
        << src->changed_since_open();
  }
  {
    write_trace(small_source(), p, {});  // a new file at the path
    auto src = open_trace_file(p);
    const auto size = std::filesystem::file_size(p);
    // Zeroed in place, as dd conv=notrunc does: same size, same inode.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later modification time
    {
      std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(std::streamoff(size - 16));
      const char zeros[16] = {};
      f.write(zeros, 16);
    }
    EXPECT_EQ(std::filesystem::file_size(p), size);
    EXPECT_NE(src->changed_since_open().find("it was written to"), std::string::npos)
        << src->changed_since_open();
  }
  {
    auto src = open_trace_file(p);
    write_trace(small_source(), p, {});  // replaced by rename (atomic writers do that)
    EXPECT_NE(src->changed_since_open().find("another file was put at its path"), std::string::npos)
        << src->changed_since_open();
  }
}

// A header of 50 million nested '[' (inside the 100 MB header limit) took
// 4 GB and 14 s before JSON parsing failed, and under a memory limit the
// message named neither the file nor the header. The depth is bounded first.
TEST(TraceFile, ADeeplyNestedHeaderIsRefusedBeforeParsing) {
  testing::TempDir dir;
  const std::string header = std::string(1000000, '[');
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[size_t(i)] = char((n >> (8 * i)) & 0xff);
  const auto p = dir.write("deep.safetensors", bytes + header);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    open_trace_file(p);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              p.string() +
                  ": header: expected JSON nested at most 16 levels deep, found more at "
                  "byte 16 of the header");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // Brackets inside strings are text, not nesting.
  std::vector<st::TensorInfo> tensors;
  std::map<std::string, std::string> meta;
  EXPECT_NO_THROW(st::parse_header(
      R"({"__metadata__": {"note": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"[[[["}})", 0, "x",
      &tensors, &meta));
  EXPECT_EQ(meta.at("note").substr(0, 3), "[[[");
}

}  // namespace
}  // namespace moebench
