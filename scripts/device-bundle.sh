#!/usr/bin/env bash
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
# Binaries for a GPU machine that cannot install anything (the lent one has
# no network, docs/GPU.md): builds them here, then copies into DIR
#   DIR/bin  moebench, run_suite, bench_gpu and the GPU tests: gpu_experts_tests,
#            replay_gpu_tests, gpu_layer_tests, tools_tests (stripped)
#   DIR/lib  the shared libraries they load that a CUDA image may lack
#            (Debian's fmt, toml++, oneDNN, OpenCL loader, libgomp); the C
#            and C++ runtimes and CUDA's own libraries are left to that
#            machine (its glibc and libstdc++ must be as new as this one's)
# and the same compressed, DIR.tar.gz (about 20 MB: DIR itself is about 60 MB,
# which with the repository is more than a device call carries, 64 MiB).
# Then, there, from the repository root with DIR.tar.gz carried along:
#   tar -xzf DIR.tar.gz
#   LD_LIBRARY_PATH=DIR/lib:/usr/local/cuda/lib64 scripts/gpu-session.sh DIR/bin OUT
#   scripts/device-bundle.sh DIR [BUILD_DIR]
set -euo pipefail
dir=${1:?DIR}
build=${2:-build}
cmake --build "$build" -j "$(nproc)" --target moebench run_suite bench_gpu gpu_experts_tests replay_gpu_tests \
  gpu_layer_tests tools_tests > /dev/null
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib"
cp "$build/bin/moebench" "$build/bin/run_suite" "$build/bin/bench_gpu" "$build/tests/gpu_experts_tests" \
  "$build/tests/replay_gpu_tests" "$build/tests/gpu_layer_tests" "$build/tests/tools_tests" "$dir/bin/"
strip "$dir"/bin/*
for b in "$dir"/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    libcuda*|libcublas*|libcudart*|libnv*) ;;
    *) cp -L "$lib" "$dir/lib/" ;;
  esac
done
tar -C "$(dirname "$dir")" -czf "$dir.tar.gz.part" "$(basename "$dir")"
mv "$dir.tar.gz.part" "$dir.tar.gz"
echo "$dir: $(ls "$dir/bin" | tr '\n' ' ')| libraries: $(ls "$dir/lib" | tr '\n' ' ')| $(du -sh "$dir" | cut -f1), compressed $dir.tar.gz $(du -sh "$dir.tar.gz" | cut -f1)"
