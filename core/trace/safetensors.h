// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The safetensors container (https://github.com/huggingface/safetensors):
//   8 bytes   little-endian u64 N, the header size
//   N bytes   JSON: {"<tensor>": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
//                    ..., "__metadata__": {"<key>": "<string>", ...}}
//   rest      the tensors' bytes; offsets are relative to the start of this part
//
// The reader memory-maps the file and validates the header completely
// before anything is read: sizes, offsets, dtypes and shapes must agree
// exactly (no holes, no overlaps, nothing past the end), so a truncated file
// or a header that lies about sizes is rejected with a message that names
// the file and the tensor.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/atomic_file.h"

namespace moebench::st {

enum class DType { kBool, kU8, kI8, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64 };

const char* to_string(DType d);
size_t dtype_size(DType d);
bool parse_dtype(const std::string& s, DType* out);

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets in the data section
  int64_t numel() const;
};

// Parses and validates a header (the JSON text) against a data section of
// `data_size` bytes. `file` is used in messages. Throws moebench::Error.
void parse_header(const std::string& json_text, uint64_t data_size, const std::string& file,
                  std::vector<TensorInfo>* tensors, std::map<std::string, std::string>* metadata);

// A memory-mapped, validated safetensors file.
class File {
 public:
  static std::unique_ptr<File> open(const std::filesystem::path& path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when absent.
  const TensorInfo* find(const std::string& name) const;
  // The tensor's bytes (may be unaligned): read them with read(), never
  // directly. They are the mapping's: another process that truncates the
  // file makes a direct read end the process (SIGBUS).
  const uint8_t* data(const TensorInfo& t) const { return data_ + t.begin; }
  // Copies n bytes at `src` (inside the mapping) to `dst`. A file cut short
  // under the mapping is a moebench::Error naming it, not a SIGBUS.
  void read(const uint8_t* src, void* dst, size_t n) const;
  // "" while the file at path() is the one opened, with the size and
  // modification time it had; otherwise what changed (a file written to,
  // truncated or replaced while a run reads it gives other results).
  std::string changed() const;
  // The file's identity when it was opened (core/util/paths.h, file_stamp).
  std::string stamp() const;

 private:
  struct Identity {
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtime_ns = 0;
  };
  File() = default;
  Identity identity_;
  std::string path_;
  uint64_t size_ = 0;
  const uint8_t* base_ = nullptr;  // mapping
  const uint8_t* data_ = nullptr;  // start of the data section
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes a safetensors file whose tensor sizes are known up front, so that
// tensors can be filled in any order (e.g. token by token into several
// tensors) with write_at(). Tensors are laid out in the order given; the
// header is padded so the data section starts 64-byte aligned. Nothing
// appears at the destination until commit().
class Writer {
 public:
  struct Spec {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  Writer(const std::filesystem::path& path, const std::vector<Spec>& tensors,
         const std::map<std::string, std::string>& metadata);
  // Writes `n` bytes at byte offset `offset` inside tensor `name`.
  void write_at(const std::string& name, uint64_t offset, const void* data, size_t n);
  const TensorInfo& tensor(const std::string& name) const;
  // REQUIRES: every byte of every tensor was written.
  void commit();

 private:
  AtomicFileWriter out_;
  uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::vector<uint64_t> written_;  // bytes written per tensor (for the completeness check)
};

// IEEE 754 binary16 <-> binary32 (round to nearest even), bit-exact on every machine.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

// n little-endian binary16 values at src (any alignment) -> dst[n], the same
// bits as half_to_float, 16 at a time in vector code. Returns true when any
// of them is NaN.
bool half_to_float_n(const uint8_t* src, int64_t n, float* dst);

// src[n] -> dst[n], the same bits as float_to_half, 16 at a time.
void float_to_half_n(const float* src, int64_t n, uint16_t* dst);

}  // namespace moebench::st
