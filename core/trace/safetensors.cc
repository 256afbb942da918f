// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/trace/safetensors.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/util/detmath.h"
#include "core/util/error.h"
#include "core/util/json_text.h"
#include "core/util/paths.h"

namespace moebench::st {

namespace {
constexpr uint64_t kMaxHeader = 100ull << 20;  // same limit as the reference implementation

struct DTypeName {
  DType d;
  const char* name;
  size_t size;
};
constexpr DTypeName kDTypes[] = {
    {DType::kBool, "BOOL", 1}, {DType::kU8, "U8", 1},   {DType::kI8, "I8", 1},
    {DType::kI16, "I16", 2},   {DType::kU16, "U16", 2}, {DType::kF16, "F16", 2},
    {DType::kBF16, "BF16", 2}, {DType::kI32, "I32", 4}, {DType::kU32, "U32", 4},
    {DType::kF32, "F32", 4},   {DType::kF64, "F64", 8}, {DType::kI64, "I64", 8},
    {DType::kU64, "U64", 8},
};

[[noreturn]] void bad(const std::string& file, const std::string& where,
                      const std::string& expected, const std::string& found) {
  throw Error(fmt::format("{}: {}expected {}, found {}", file, where.empty() ? "" : where + ": ",
                          expected, found));
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

// A mapped file cut short by another process (truncate, an in-place copy)
// turns a read past its new end into SIGBUS, which ends the process with no
// message. Reads of a mapping go through guarded_copy(): while one is in
// progress on a thread, a SIGBUS on that thread jumps back to it and the read
// reports failure. Any other SIGBUS goes to the handler that was there before.
thread_local sigjmp_buf* t_bus_jump = nullptr;
struct sigaction g_previous_bus {};

void on_sigbus(int sig, siginfo_t* info, void* context) {
  if (t_bus_jump) siglongjmp(*t_bus_jump, 1);
  if (g_previous_bus.sa_flags & SA_SIGINFO) {
    g_previous_bus.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_bus.sa_handler != SIG_DFL && g_previous_bus.sa_handler != SIG_IGN) {
    g_previous_bus.sa_handler(sig);
    return;
  }
  // The default action: returning re-runs the faulting read, which ends the process.
  ::signal(SIGBUS, SIG_DFL);
}

void install_bus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sigemptyset(&sa.sa_mask);
    // SA_NODEFER: the jump leaves the handler without restoring the signal
    // mask, so SIGBUS must not be blocked while it runs.
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    ::sigaction(SIGBUS, &sa, &g_previous_bus);
  });
}

// memcpy that reports a SIGBUS (the mapped file shrank) as false. Only plain
// bytes are copied between the jump's two ends: nothing is skipped.
bool guarded_copy(void* dst, const void* src, size_t n) {
  sigjmp_buf jump;
  sigjmp_buf* const outer = t_bus_jump;
  if (sigsetjmp(jump, 0) != 0) {
    t_bus_jump = outer;
    return false;
  }
  t_bus_jump = &jump;
  // The fences keep the compiler from dropping the store above (memcpy
  // touches no global, so the store looks dead) or moving the copy past them.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(dst, src, n);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_bus_jump = outer;
  return true;
}

// The deepest nesting of arrays and objects a header may have: a real one
// has 3 ({tensor: {shape: [...]}}). A header of 50 million '[' once took
// 4 GB and 14 s before JSON parsing failed.
constexpr int kMaxHeaderDepth = 16;

// Where `json` nests deeper than kMaxHeaderDepth (its byte offset), or npos.
size_t too_deep_at(const std::string& json) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxHeaderDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string::npos;
}
}  // namespace

const char* to_string(DType d) {
  for (const auto& x : kDTypes) {
    if (x.d == d) return x.name;
  }
  return "?";
}

size_t dtype_size(DType d) {
  for (const auto& x : kDTypes) {
    if (x.d == d) return x.size;
  }
  return 0;
}

bool parse_dtype(const std::string& s, DType* out) {
  for (const auto& x : kDTypes) {
    if (s == x.name) {
      *out = x.d;
      return true;
    }
  }
  return false;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void parse_header(const std::string& json_text, uint64_t data_size, const std::string& file,
                  std::vector<TensorInfo>* tensors, std::map<std::string, std::string>* metadata) {
  // The C++ and Python readers take the same headers: JSON parsers differ on
  // a byte-order mark (nlohmann skips it, Python refuses it) and on a NUL
  // (nlohmann stops there and ignores what follows), so both are refused.
  if (json_text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    bad(file, "header", "JSON text without a byte-order mark", "a UTF-8 byte-order mark");
  if (const size_t nul = json_text.find('\0'); nul != std::string::npos) {
    bad(file, "header", "JSON text (padded with spaces, never NUL)",
        fmt::format("a NUL byte at byte {} of the header", nul));
  }
  if (const size_t at = too_deep_at(json_text); at != std::string::npos) {
    bad(file, "header", fmt::format("JSON nested at most {} levels deep", kMaxHeaderDepth),
        fmt::format("more at byte {} of the header", at));
  }
  nlohmann::json h;
  // JSON lets a repeated key silently replace the first; a header with one is
  // ambiguous (which shape or metadata value was meant?), so it is refused.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  const auto on_event = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) {
      keys.emplace_back();
    } else if (ev == E::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (ev == E::key && !keys.empty() && parsed.is_string()) {
      if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  try {
    h = nlohmann::json::parse(json_text, on_event);
  } catch (const nlohmann::json::exception& e) {
    bad(file, "header", "a JSON object", fmt::format("invalid JSON ({})", e.what()));
  }
  if (!duplicate.empty()) {
    bad(file, "header", "each key once per JSON object", fmt::format("key '{}' twice", duplicate));
  }
  if (!h.is_object()) bad(file, "header", "a JSON object", std::string(h.type_name()));
  tensors->clear();
  metadata->clear();
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object())
        bad(file, "__metadata__", "an object of strings", std::string(v.type_name()));
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          bad(file, "__metadata__." + m.key(), "a string", std::string(m.value().type_name()));
        }
        (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!v.is_object())
      bad(file, where, "an object with dtype, shape, data_offsets", std::string(v.type_name()));
    TensorInfo t;
    t.name = name;
    const auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) bad(file, where, "a string 'dtype'", "none");
    if (!parse_dtype(dt->get<std::string>(), &t.dtype)) {
      bad(file, where, "a safetensors dtype (F32, F16, I32, ...)",
          fmt::format("'{}'", dt->get<std::string>()));
    }
    const auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) bad(file, where, "an array 'shape'", "none");
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        bad(file, where + " shape", "non-negative integers", d.dump());
      }
      t.shape.push_back(d.get<int64_t>());
      if (mul_overflows(numel, uint64_t(d.get<int64_t>()), &numel)) {
        bad(file, where + " shape", "a size that fits in 64 bits", sh->dump());
      }
    }
    const auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned()) {
      bad(file, where, "'data_offsets' = [begin, end] (non-negative integers)",
          off == v.end() ? "none" : off->dump());
    }
    t.begin = (*off)[0].get<uint64_t>();
    t.end = (*off)[1].get<uint64_t>();
    uint64_t bytes = 0;
    if (mul_overflows(numel, dtype_size(t.dtype), &bytes)) {
      bad(file, where, "a byte size that fits in 64 bits", "overflow");
    }
    if (t.end < t.begin || t.end - t.begin != bytes) {
      bad(file, where,
          fmt::format("data_offsets spanning {} bytes ({} x {})", bytes, numel, to_string(t.dtype)),
          fmt::format("[{}, {}]", t.begin, t.end));
    }
    if (t.end > data_size) {
      bad(file, where, fmt::format("data inside the file's {} data bytes", data_size),
          fmt::format("data_offsets ending at {} (truncated file?)", t.end));
    }
    tensors->push_back(std::move(t));
  }
  // Tensors must tile the data section exactly: no overlap, no hole, no tail.
  std::vector<const TensorInfo*> sorted;
  for (const auto& t : *tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t pos = 0;
  for (const auto* t : sorted) {
    if (t->begin != pos) {
      bad(file, "tensor '" + t->name + "'",
          fmt::format("data starting at byte {} (tensors must be contiguous)", pos),
          fmt::format("data_offsets starting at {}", t->begin));
    }
    pos = t->end;
  }
  if (pos != data_size) {
    bad(file, "data section", fmt::format("{} bytes as the header describes", pos),
        fmt::format("{} bytes", data_size));
  }
}

std::unique_ptr<File> File::open(const std::filesystem::path& path) {
  const std::string p = path.string();
  // Checked before opening: open() of a FIFO blocks until a writer comes.
  if (const std::string kind = file_kind(path); kind != "a regular file") {
    bad(p, "", "a readable safetensors file (a regular file)", kind);
  }
  const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) bad(p, "", "a readable safetensors file", std::strerror(errno));
  struct stat sb {};
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    bad(p, "", "a regular file", "something else");
  }
  const uint64_t size = static_cast<uint64_t>(sb.st_size);
  if (size < 8) {
    ::close(fd);
    bad(p, "", "at least 8 bytes (the header size)", fmt::format("{} bytes", size));
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) bad(p, "", "a file that can be memory-mapped", std::strerror(errno));
  install_bus_handler();
  std::unique_ptr<File> f(new File());
  f->path_ = p;
  f->size_ = size;
  f->base_ = static_cast<const uint8_t*>(m);
  f->identity_ = {uint64_t(sb.st_dev), uint64_t(sb.st_ino), size,
                  int64_t(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec};
  uint8_t size_field[8];
  f->read(f->base_, size_field, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | size_field[i];
  if (n > kMaxHeader || n > size - 8) {
    bad(p, "header size",
        fmt::format("at most {} bytes (file has {} after the size field)",
                    std::min<uint64_t>(kMaxHeader, size - 8), size - 8),
        fmt::format("{} bytes", n));
  }
  std::string header(n, '\0');
  f->read(f->base_ + 8, header.data(), n);
  parse_header(header, size - 8 - n, p, &f->tensors_, &f->metadata_);
  f->data_ = f->base_ + 8 + n;
  return f;
}

File::~File() {
  if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

void File::read(const uint8_t* src, void* dst, size_t n) const {
  if (guarded_copy(dst, src, n)) return;
  struct stat sb {};
  const std::string now = ::stat(path_.c_str(), &sb) == 0
                              ? fmt::format("{} bytes now", uint64_t(sb.st_size))
                              : fmt::format("now {}", file_kind(path_));
  throw Error(fmt::format(
      "{}: expected the file to stay as it was while it is read, found it cut short under the "
      "run (reading bytes {} to {} of the {} it had when opened; {}): was it truncated or "
      "copied over in place? Nothing read from it is used; rerun once it is complete",
      path_, uint64_t(src - base_), uint64_t(src - base_) + n, size_, now));
}

std::string File::changed() const {
  struct stat sb {};
  if (::stat(path_.c_str(), &sb) != 0) return fmt::format("it is now {}", file_kind(path_));
  const int64_t mtime = int64_t(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec;
  if (uint64_t(sb.st_dev) != identity_.dev || uint64_t(sb.st_ino) != identity_.ino)
    return "another file was put at its path";
  if (uint64_t(sb.st_size) != identity_.size)
    return fmt::format("its size went from {} to {} bytes", identity_.size, uint64_t(sb.st_size));
  if (mtime != identity_.mtime_ns) return "it was written to (its modification time moved)";
  return "";
}

std::string File::stamp() const {
  return stat_stamp(identity_.dev, identity_.ino, identity_.size, identity_.mtime_ns);
}

const TensorInfo* File::find(const std::string& name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Writer::Writer(const std::filesystem::path& path, const std::vector<Spec>& tensors,
               const std::map<std::string, std::string>& metadata)
    : out_(path) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  uint64_t pos = 0;
  for (const auto& s : tensors) {
    TensorInfo t;
    t.name = s.name;
    t.dtype = s.dtype;
    t.shape = s.shape;
    t.begin = pos;
    t.end = pos + uint64_t(t.numel()) * dtype_size(t.dtype);
    pos = t.end;
    h[t.name] = {
        {"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
    tensors_.push_back(t);
  }
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = m;
  }
  std::string text = json_text(h);
  while ((8 + text.size()) % 64 != 0) text += ' ';
  uint8_t size_le[8];
  for (int i = 0; i < 8; ++i) size_le[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  out_.write(size_le, 8);
  out_.write(text);
  data_start_ = 8 + text.size();
  written_.assign(tensors_.size(), 0);
  // Size the file so tensors can be filled in any order.
  if (pos > 0) {
    const uint8_t zero = 0;
    out_.pwrite(data_start_ + pos - 1, &zero, 1);
  }
}

const TensorInfo& Writer::tensor(const std::string& name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return t;
  }
  throw InternalError("safetensors writer: no tensor " + name);
}

void Writer::write_at(const std::string& name, uint64_t offset, const void* data, size_t n) {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (t.name != name) continue;
    if (offset + n > t.end - t.begin) {
      throw InternalError(fmt::format("safetensors writer: write past the end of {}", name));
    }
    out_.pwrite(data_start_ + t.begin + offset, data, n);
    written_[i] += n;
    return;
  }
  throw InternalError("safetensors writer: no tensor " + name);
}

void Writer::commit() {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (written_[i] != tensors_[i].end - tensors_[i].begin) {
      throw InternalError(fmt::format("safetensors writer: tensor {} has {} of {} bytes written",
                                      tensors_[i].name, written_[i],
                                      tensors_[i].end - tensors_[i].begin));
    }
  }
  out_.commit();
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = int32_t((x >> 23) & 0xff);
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf / nan
  const int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {
    if (e < -10) return uint16_t(sign);  // underflow -> signed zero
    mant |= 0x800000u;
    const uint32_t shift = uint32_t(14 - e);
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return uint16_t(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      x = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Exact without branches: the half's exponent and mantissa, moved into a
// float's, give the value times 2^-112 (a normal or subnormal float); one
// exact multiplication by 2^112 rebiases it. Inf and NaN get the all-ones
// exponent. Same bits as half_to_float for every input.
MOEBENCH_CLONES bool half_to_float_n(const uint8_t* src, int64_t n, float* dst) {
  typedef uint16_t h16 __attribute__((vector_size(32), aligned(2)));
  typedef uint32_t u16v __attribute__((vector_size(64), aligned(4)));
  typedef int32_t i16v __attribute__((vector_size(64), aligned(4)));
  typedef float f16v __attribute__((vector_size(64), aligned(4)));
  i16v nan = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    h16 h;
    std::memcpy(&h, src + 2 * i, 32);
    const u16v x = __builtin_convertvector(h, u16v);
    const u16v mag = (x & 0x7fffu) << 13;
    f16v f;
    std::memcpy(&f, &mag, 64);
    f = f * 0x1p112f;
    u16v bits;
    std::memcpy(&bits, &f, 64);
    bits |= u16v((x & 0x7c00u) == 0x7c00u) & 0x7f800000u;
    bits |= (x & 0x8000u) << 16;
    std::memcpy(dst + i, &bits, 64);
    nan |= (x & 0x7fffu) > 0x7c00u;
  }
  uint64_t w[8];
  std::memcpy(w, &nan, 64);
  bool any = ((w[0] | w[1]) | (w[2] | w[3])) | ((w[4] | w[5]) | (w[6] | w[7]));
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = half_to_float(h);
    any |= (h & 0x7fffu) > 0x7c00u;
  }
  return any;
}

// Round to nearest even without branches (every lane takes all three
// paths, a select keeps one): magnitudes from 65536 up, inf and NaN saturate;
// below the smallest normal half (2^-14), adding 0.5 rounds to a multiple of
// 2^-24 in the FPU's own round-to-nearest-even and leaves the half's bits in
// the low mantissa; normal values are rebiased with the round-half-to-even
// increment (0xfff plus the kept mantissa's lowest bit) before truncating.
MOEBENCH_CLONES void float_to_half_n(const float* src, int64_t n, uint16_t* dst) {
  typedef uint16_t h16 __attribute__((vector_size(32), aligned(2)));
  typedef uint32_t u16v __attribute__((vector_size(64), aligned(4)));
  typedef float f16v __attribute__((vector_size(64), aligned(4)));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    u16v x;
    std::memcpy(&x, src + i, 64);
    const u16v sign = (x >> 16) & 0x8000u;
    const u16v a = x & 0x7fffffffu;
    const u16v big = a > 0x7f800000u ? u16v{} + 0x7e00u : u16v{} + 0x7c00u;
    f16v af;
    std::memcpy(&af, &a, 64);
    af = af + 0.5f;
    u16v sub;
    std::memcpy(&sub, &af, 64);
    sub = sub - 0x3f000000u;
    const u16v normal = (a + ((uint32_t(15 - 127) << 23) + 0xfffu) + ((a >> 13) & 1u)) >> 13;
    const u16v h = a >= 0x47800000u ? big : (a < (113u << 23) ? sub : normal);
    const h16 out = __builtin_convertvector(h | sign, h16);
    std::memcpy(dst + i, &out, 32);
  }
  for (; i < n; ++i) dst[i] = float_to_half(src[i]);
}

}  // namespace moebench::st
