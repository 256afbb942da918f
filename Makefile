# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
# moebench: the two set-up commands of the README, and helpers.
#   make run    install what is missing, build, run the default suite (suites/smoke.toml)
#               on the simulated backend, write results/ and its figures
#   make test   install what is missing, build, run every C++ and Python test and the
#               regression check against results/reference/
# Other targets: build, format, slurm-test, bench, bench-kernels, calibrate, validation, compare, region, screen, known-truth, report, report-accept, predictors,
# characterize, tiny-models, tiny-traces, tiny-routing, asan, fuzz, clean.

BUILD      ?= build
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
BUILD_TYPE ?= Release
SUITE      ?= suites/smoke.toml
CMAKE_ARGS ?=

.PHONY: all deps build test format slurm-test run bench bench-kernels gpu-session calibrate validation compare compare-suite fuzz-build fuzz-corpus testbeds region screen known-truth report report-accept predictors characterize tiny-models tiny-traces tiny-routing asan fuzz clean

all: build

# Installs missing Debian packages and records which Python to use.
$(BUILD)/.deps: scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@./scripts/install-deps.sh | tail -n 1 > $(BUILD)/.python.tmp && mv $(BUILD)/.python.tmp $(BUILD)/.python
	@touch $@

deps: $(BUILD)/.deps

PY = $(shell sed -n 's/^PYTHON=//p' $(BUILD)/.python 2>/dev/null || echo /usr/bin/python3)

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

test: build
	$(PY) ci/check_format.py
	cd $(BUILD) && MOEBENCH_HOME=$(CURDIR) ctest --output-on-failure -j $(JOBS) -LE gpu
	MOEBENCH_HOME=$(CURDIR) MOEBENCH_BIN=$(CURDIR)/$(BUILD)/bin/moebench MOEBENCH_RUN_SUITE=$(CURDIR)/$(BUILD)/bin/run_suite \
	  $(PY) -m pytest -q -p no:cacheprovider workloads/python workloads/tiny_moe workloads/test_record_hf.py workloads/test_convert_routed_experts.py analysis ci
	MOEBENCH_HOME=$(CURDIR) $(PY) ci/check_regression --bin $(BUILD)/bin/run_suite --jobs $(JOBS)

# scripts/slurm-sweep against a real one-node Slurm started on this machine
# (root: installs slurmctld, slurmd and munge when missing, starts
# and stops the daemons). Not part of make test. Log and results:
# results/slurm-test/<UTC time>/.
slurm-test: build
	MOEBENCH_HOME=$(CURDIR) ci/slurm-test

# Formats every C++/CUDA file as .clang-format says (make test checks it).
format: deps
	$(PY) ci/check_format.py --fix

run: build
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/run_suite $(SUITE)
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/smoke.py --results results

bench: build
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/bench_trace
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/bench_engine
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/bench_decisions
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/bench_expert

# The CPU expert kernels by tokens per expert, with this machine's bandwidth
# and peaks measured in the same run (analysis/kernels.py; make report).
bench-kernels: build
	mkdir -p results/bench
	$(BUILD)/bin/bench_expert --benchmark_format=json --benchmark_out=results/bench/bench_expert.json.tmp \
	  --benchmark_out_format=json > /dev/null && mv results/bench/bench_expert.json.tmp results/bench/bench_expert.json

# On a machine with a GPU (docs/GPU.md): the GPU tests, compute-sanitizer,
# calibration of the h100-host profile, bench_gpu and the replay of
# suites/gpu-replay.toml, every log in results/gpu-session. Where no GPU is
# visible each step says so and the target fails.
gpu-session: build
	MOEBENCH_HOME=$(CURDIR) scripts/gpu-session.sh $(BUILD)/bin results/gpu-session

# The real backend's CPU tables on this machine (docs/BACKENDS.md), and the
# sim-vs-real validation (analysis/validation.py; make report): each model
# and dtype calibrated just before its real cases (tools/validate_interleaved.py;
# `make calibrate` then `MOEBENCH_CONFIG_PATH=results/calibrated/configs
# run_suite suites/validation.toml` is the single calibration). Run on a quiet
# machine: both are wall-clock measurements. Both write the profile under
# results/ (found through MOEBENCH_CONFIG_PATH before the tracked configs/,
# whose local-cpu-calibrated.toml is the development machine's, committed).
# ROUNDS=3 (or more) repeats the whole protocol and the report pools the
# rounds into a verdict with confidence intervals (docs/BACKENDS.md, Rounds).
ROUNDS ?= 1
CALIBRATED_ROOT ?= results/calibrated/configs
calibrate: build
	mkdir -p $(CALIBRATED_ROOT)/hardware
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/moebench calibrate --hardware local-cpu --out $(CALIBRATED_ROOT)/hardware/local-cpu-calibrated.toml
	@echo "use it: MOEBENCH_CONFIG_PATH=$(CALIBRATED_ROOT) $(BUILD)/bin/run_suite suites/validation.toml"

validation: build
	MOEBENCH_HOME=$(CURDIR) $(PY) tools/validate_interleaved.py --bin $(BUILD)/bin --results results --rounds $(ROUNDS)
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/validation.py --results results --out results/report
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/validation_tasks.py --results results --out results/report

# Small trained MoE models (docs/TINY_MODELS.md): train both
# families on the CPU with Debian's PyTorch (installed if missing) on the
# KJV Bible (bible-kjv), then record their routing traces, the traces'
# statistics and the deferral/skipping accuracy sweeps (perplexity of the
# continuation after an unmodified prompt, and next-word generation
# accuracy; three disjoint stretches of held-out text, the "seeds" of
# analysis/tiny_accuracy.py) into results/tiny/.
TINY ?= mixtral deepseek
TINY_SEQS ?= 64
TINY_WORDS ?= 1500
tiny-models:
	./scripts/install-deps.sh python3-torch libopenblas0-pthread bible-kjv > /dev/null
	for f in $(TINY); do /usr/bin/python3 workloads/tiny_moe/train.py --family $$f --out models/tiny-$$f || exit 1; done

tiny-traces: build
	mkdir -p results/tiny
	for f in $(TINY); do \
	  $(BUILD)/bin/moebench trace record --weights models/tiny-$$f --text models/tiny-$$f/heldout.txt \
	    --sequences 16 --seq-len 128 --prompt-len 32 --offset 100000 --out results/tiny/$$f.calib.safetensors && \
	  $(BUILD)/bin/moebench trace record --weights models/tiny-$$f --text models/tiny-$$f/heldout.txt \
	    --sequences $(TINY_SEQS) --seq-len 128 --prompt-len 32 --out results/tiny/$$f.trace.safetensors && \
	  $(BUILD)/bin/moebench trace record --weights models/tiny-$$f --text models/tiny-$$f/heldout.txt \
	    --sequences 16 --seq-len 128 --prompt-len 32 --offset 50000 --out results/tiny/$$f.trace2.safetensors && \
	  $(BUILD)/bin/moebench trace stats results/tiny/$$f.trace.safetensors --json results/tiny/$$f.stats.json \
	    > results/tiny/$$f.stats.txt && \
	  MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/moebench trace stats --model tiny-$$f --sequences $(TINY_SEQS) \
	    --prompt-len 32 --decode-len 96 --json results/tiny/$$f.synthetic.stats.json \
	    > results/tiny/$$f.synthetic.stats.txt && \
	  for o in 0 60000 120000; do \
	    $(BUILD)/bin/moebench model accuracy --weights models/tiny-$$f --text models/tiny-$$f/heldout.txt \
	      --sequences $(TINY_SEQS) --seq-len 128 --scope decode --prompt-len 32 --offset $$o \
	      --out results/tiny/$$f.accuracy-$$o.csv && \
	    $(BUILD)/bin/moebench model cloze --weights models/tiny-$$f --text models/tiny-$$f/heldout.txt \
	      --items $(TINY_WORDS) --context 96 --offset $$o --out results/tiny/$$f.cloze-$$o.csv || exit 1; \
	  done; \
	done

# Every strategy on the recorded traces and on synthetic routing of the same
# shape; analysis/tiny_routing.py compares the rankings (needs tiny-traces).
tiny-routing: build
	for f in $(TINY); do for s in routing routing-trace; do \
	  MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/run_suite suites/tiny-$$f-$$s.toml --quiet || exit 1; done; done
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/tiny_routing.py --results results --out results/report

# A strategy against every baseline (docs/ADDING_A_POLICY.md), after every
# component's unit tests (baselines/**/*_test.cc, the new policy's among them)
# and the conformance test pass:
# suites/compare.toml with STRATEGY in place of example-fifo (every mention:
# the strategy list, its Belady variant and the description), written under
# results/compare/ and run from there.
STRATEGY ?= example-fifo
COMPARE_SUITE ?= results/compare/compare-$(STRATEGY).toml
compare: compare-suite build
	@echo "make compare: the components' unit tests and the conformance test first (yours included)"
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/tests/baselines_tests --gtest_brief=1
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/run_suite $(COMPARE_SUITE)
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/compare.py --strategy $(STRATEGY)

compare-suite:
	@case "$(STRATEGY)" in ""|.*|*[!A-Za-z0-9._+-]*) \
	  echo "make compare: expected STRATEGY to be a strategy preset name (letters, digits, . _ + -), found '$(STRATEGY)'" >&2; exit 2;; esac
	@test -f configs/strategies/$(STRATEGY).toml || { \
	  echo "make compare: expected a strategy preset configs/strategies/$(STRATEGY).toml, found none" >&2; exit 2; }
	mkdir -p $(dir $(COMPARE_SUITE))
	sed 's/example-fifo/$(STRATEGY)/g' suites/compare.toml > $(COMPARE_SUITE).tmp && mv $(COMPARE_SUITE).tmp $(COMPARE_SUITE)

# Each fitted testbed's report (scripts/fit-testbed --json): its calibration
# targets, each fitted constant's share of the baseline's step, and whether
# the proposed system's published numbers stay attainable;
# analysis/testbeds.py shows them in the report. Runs the targets' suites.
FITTED_TESTBEDS = hybrimoe-a6000 smoe-rtx4090 dali-rtx3090
testbeds: build
	mkdir -p results/testbeds
	for p in $(FITTED_TESTBEDS); do \
	  MOEBENCH_HOME=$(CURDIR) MOEBENCH_RUN_SUITE=$(CURDIR)/$(BUILD)/bin/run_suite $(PY) scripts/fit-testbed $$p \
	    --json results/testbeds/$$p.json || exit 1; \
	done

# Each paper testbed's region (scripts/testbed-region; docs/TESTBEDS.md, "The
# region of testbeds"): the profiles its baselines' published numbers allow
# (every point of the box for KTransformers' two and MoE-Lightning's T4,
# which have no target),
# then every claim of its region_suites at the region's one-at-a-time points.
# REGION_OPTS="--unknowns KEY,..." judges at the named unknowns' points only.
# Resumable: a point's finished suites are not run again. About 58 minutes
# on 2 cores (2026-12-01, docs/measurements/region-2026-12-01/).
REGION_OPTS ?=
REGION_TESTBEDS = $(FITTED_TESTBEDS) ktransformers-a100 ktransformers-rtx4080 moe-lightning-t4
region: build
	for p in $(REGION_TESTBEDS); do \
	  MOEBENCH_HOME=$(CURDIR) MOEBENCH_RUN_SUITE=$(CURDIR)/$(BUILD)/bin/run_suite $(PY) scripts/testbed-region $$p \
	    --verdicts $(REGION_OPTS) || exit 1; \
	done

# The screen of every region testbed (docs/TESTBEDS.md, "Screening"): each
# number that is neither a fact nor an [[unknown]] moved alone to half and twice
# its value, the solved keys solved there, every claim judged; results/screen/
# <profile>/region.md names the keys that move a verdict. Resumable as region.
screen: build
	for p in $(REGION_TESTBEDS); do \
	  MOEBENCH_HOME=$(CURDIR) MOEBENCH_RUN_SUITE=$(CURDIR)/$(BUILD)/bin/run_suite $(PY) scripts/testbed-region $$p \
	    --screen --verdicts $(REGION_OPTS) || exit 1; \
	done

# The known-truth test of the verdict pipeline (docs/KNOWN_TRUTH.md): the H200
# replay's claims about HybriMoE, SMoE and DALI judged on the testbed identified
# from its baselines' times; prints sensitivity and specificity and exits 1 when
# their targets are not met. The profile's targets are checked against the
# replay, the fit's report written beside the verdicts. 32 s on 2 cores (2026-12-07).
known-truth: build
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/known_truth.py --check-profile
	mkdir -p results/known-truth
	MOEBENCH_HOME=$(CURDIR) MOEBENCH_RUN_SUITE=$(CURDIR)/$(BUILD)/bin/run_suite $(PY) scripts/fit-testbed known-truth-h200 \
	  --no-shares --json results/known-truth/fit.json
	for b in 1 8; do MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/run_suite -q -j $(JOBS) suites/known-truth/h200-batch$$b.toml || exit 1; done
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/known_truth.py --results results --out results/known-truth --require

report: build
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/report.py --results results --out results/report

# Records today's verdicts as results/reference/verdicts.csv (the report's "before" column).
report-accept: build
	MOEBENCH_HOME=$(CURDIR) $(PY) analysis/report.py --results results --out results/report --accept

# Predictor accuracy on the papers' models (SMoE Fig. 3, DALI Tables 2 and 8):
# trains SMoE's linear predictor on the calibration stream, evaluates on the
# evaluation stream, writes results/predictors/*.json for the report.
PRED_DIR = results/predictors
# Every evaluation runs on 3 workload seeds (a verdict needs its effect in each).
PRED_SEEDS = 1 2 3
predictors: build
	mkdir -p $(PRED_DIR)
	# The training (on all threads) and each seed's evaluations run at the same
	# time; DeepSeek-V3's evaluations wait for the trained predictor. Every
	# output is its own file, so the order changes nothing written.
	MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/moebench predictor train --model deepseek-v3 --sequences 64 \
	  --out $(PRED_DIR)/deepseek-v3-linear.safetensors & train=$$!; \
	pids=""; \
	for s in $(PRED_SEEDS); do \
	  ( for b in 8 16 32 64; do \
	      for m in deepseek-v2-lite mixtral-8x7b; do \
	        MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/moebench predictor eval --model $$m --seed $$s --sequences 64 --batch $$b \
	          --json $(PRED_DIR)/$$m-b$$b-s$$s.json > /dev/null || exit 1; \
	      done; \
	    done; \
	    MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/moebench predictor eval --model qwen3-30b-a3b --seed $$s --sequences 64 --batch 8 \
	      --json $(PRED_DIR)/qwen3-30b-a3b-b8-s$$s.json > /dev/null ) & pids="$$pids $$!"; \
	done; \
	wait $$train || { echo "make predictors: the DeepSeek-V3 training failed" >&2; exit 1; }; \
	for s in $(PRED_SEEDS); do \
	  MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/moebench predictor eval --model deepseek-v3 --seed $$s --sequences 64 --batch 8 \
	    --linear $(PRED_DIR)/deepseek-v3-linear.safetensors --json $(PRED_DIR)/deepseek-v3-b8-s$$s.json > /dev/null & \
	  pids="$$pids $$!"; \
	done; \
	fail=0; for p in $$pids; do wait $$p || fail=1; done; \
	if [ $$fail -ne 0 ]; then echo "make predictors: an evaluation failed (its message is above)" >&2; exit 1; fi

# Workload and cost characterisation (HybriMoE Fig. 3(b)(c)(e)(f), SMoE Fig. 5
# and 6, DALI Fig. 8): trace statistics of the calibrated synthetic workloads,
# two short decode traces, the simulated expert costs; results/characterize/.
CHAR_DIR = results/characterize
MB = MOEBENCH_HOME=$(CURDIR) $(BUILD)/bin/moebench
# The workload statistics run on 3 workload seeds (<name>-s<seed>.*); the cost table needs none.
CHAR_SEEDS = 1 2 3
characterize: build
	mkdir -p $(CHAR_DIR)
	$(MB) config cost --model deepseek-v2-lite --hardware hybrimoe-a6000 \
	  --json $(CHAR_DIR)/cost-deepseek-v2-lite-hybrimoe-a6000.json > /dev/null
	for s in $(CHAR_SEEDS); do \
	  $(MB) trace stats --model deepseek-v2-lite --seed $$s --sequences 16 --prompt-len 64 --decode-len 128 \
	    --json $(CHAR_DIR)/deepseek-v2-lite-decode-s$$s.json > /dev/null || exit 1; \
	  $(MB) trace stats --model deepseek-v2-lite --seed $$s --sequences 1 --prompt-len 128 --decode-len 0 \
	    --json $(CHAR_DIR)/deepseek-v2-lite-prefill128-s$$s.json > /dev/null || exit 1; \
	  $(MB) trace stats --model deepseek-v3 --seed $$s --sequences 16 --prompt-len 64 --decode-len 128 \
	    --json $(CHAR_DIR)/deepseek-v3-decode-s$$s.json > /dev/null || exit 1; \
	  $(MB) trace stats --model mixtral-8x7b --seed $$s --sequences 64 --prompt-len 64 --decode-len 128 --batch 8 \
	    --json $(CHAR_DIR)/mixtral-8x7b-b8-s$$s.json > /dev/null || exit 1; \
	  for m in deepseek-v3 qwen3-235b-a22b; do \
	    $(MB) trace gen --model $$m --seed $$s --sequences 1 --prompt-len 16 --decode-len 256 --no-probs --no-gate-inputs \
	      --out $(CHAR_DIR)/$$m-decode-s$$s.safetensors > /dev/null || exit 1; \
	  done; \
	done

# Hostile-input checks (docs/USAGE.md, "Reliability"); not part of `make test` (.ci/run adds a
# bounded make fuzz). libomp-14-dev: oneDNN's CMake config needs OpenMP for clang too (found
# missing by scripts/fresh-check on a clean Debian 12).
# asan: every C++ test under AddressSanitizer + UndefinedBehaviorSanitizer
# (clang, CUDA off: nvcc does not take the sanitizer flags).
# fuzz: each libFuzzer target for FUZZ_RUNS executions from the committed
# corpus (fuzz/corpus/) and the saved regressions (fuzz/regressions/); a
# crash leaves its input in $(FUZZ_BUILD)/artifacts/. FUZZ_SEED = 0 picks a
# random seed; CI (.ci/run) runs FUZZ_RUNS=20000 FUZZ_SEED=1.
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_RUNS  ?= 1000000
FUZZ_SEED  ?= 0
FUZZ_TARGETS = experiment trace requests
CLANG_PKGS = clang-14 libclang-rt-14-dev libomp-14-dev
SAN_CMAKE = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 -DMOEBENCH_CUDA=OFF \
            -DMOEBENCH_BENCHMARKS=OFF -DMOEBENCH_SANITIZE=ON
asan: deps
	./scripts/install-deps.sh $(CLANG_PKGS) > /dev/null
	cmake -S . -B $(ASAN_BUILD) $(SAN_CMAKE)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && MOEBENCH_HOME=$(CURDIR) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) -LE gpu

# The seeds: fuzz/corpus/<target>/ (hand-written), the grown corpus
# fuzz/corpus/<target>-grown.tar.gz (make fuzz-corpus) and fuzz/regressions/.
fuzz-build: deps
	./scripts/install-deps.sh $(CLANG_PKGS) > /dev/null
	cmake -S . -B $(FUZZ_BUILD) $(SAN_CMAKE) -DMOEBENCH_FUZZ=ON -DMOEBENCH_TESTS=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	for t in $(FUZZ_TARGETS); do \
	  rm -rf $(FUZZ_BUILD)/grown/$$t && mkdir -p $(FUZZ_BUILD)/grown/$$t && \
	  tar -C $(FUZZ_BUILD)/grown/$$t -xzf fuzz/corpus/$$t-grown.tar.gz || exit 1; \
	done

fuzz: fuzz-build
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t && \
	  MOEBENCH_HOME=$(CURDIR) ASAN_OPTIONS=detect_leaks=1 $(FUZZ_BUILD)/bin/fuzz_$$t -runs=$(FUZZ_RUNS) -seed=$(FUZZ_SEED) \
	    -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ \
	    $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/grown/$$t fuzz/corpus/$$t fuzz/regressions/$$t || exit 1; \
	done

# Regrows the committed corpus: each target GROW_RUNS executions (seed 7)
# from every seed above, then the inputs that add coverage (libFuzzer
# -merge=1, inputs cut to GROW_MAX_LEN bytes) become
# fuzz/corpus/<target>-grown.tar.gz (a reproducible tarball). Last grown:
# 300,000 runs each on 2026-11-25 (docs/USAGE.md, "Reliability").
GROW_RUNS ?= 300000
GROW_MAX_LEN ?= 8192
fuzz-corpus: fuzz-build
	for t in $(FUZZ_TARGETS); do \
	  rm -rf $(FUZZ_BUILD)/grow/$$t $(FUZZ_BUILD)/merged/$$t && mkdir -p $(FUZZ_BUILD)/grow/$$t $(FUZZ_BUILD)/merged/$$t \
	    $(FUZZ_BUILD)/artifacts/$$t && \
	  MOEBENCH_HOME=$(CURDIR) ASAN_OPTIONS=detect_leaks=1 $(FUZZ_BUILD)/bin/fuzz_$$t -runs=$(GROW_RUNS) -seed=7 \
	    -max_len=65536 -timeout=10 -rss_limit_mb=4096 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ \
	    $(FUZZ_BUILD)/grow/$$t $(FUZZ_BUILD)/grown/$$t fuzz/corpus/$$t fuzz/regressions/$$t && \
	  MOEBENCH_HOME=$(CURDIR) ASAN_OPTIONS=detect_leaks=0 $(FUZZ_BUILD)/bin/fuzz_$$t -merge=1 -max_len=$(GROW_MAX_LEN) \
	    -rss_limit_mb=4096 $(FUZZ_BUILD)/merged/$$t $(FUZZ_BUILD)/grow/$$t $(FUZZ_BUILD)/grown/$$t && \
	  tar -C $(FUZZ_BUILD)/merged/$$t --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
	    -cf - . | gzip -n > fuzz/corpus/$$t-grown.tar.gz.tmp && mv fuzz/corpus/$$t-grown.tar.gz.tmp fuzz/corpus/$$t-grown.tar.gz \
	    || exit 1; \
	done

clean:
	rm -rf $(BUILD)
