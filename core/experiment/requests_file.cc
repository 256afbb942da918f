// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#include "core/experiment/requests_file.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/util/atomic_file.h"
#include "core/util/error.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"
#include "core/util/strings.h"

namespace moebench {

namespace {

// Whole nanoseconds of a time on any epoch (128 bits: kMaxTimeS fits).
__extension__ typedef __int128 Ns;

// The largest time a requests file may write, in seconds (Unix-epoch
// nanoseconds read as seconds are about 1.7e18).
constexpr double kMaxTimeS = 1e20;

// The text of each number of a line's top-level keys, as written: a time is
// taken from its digits, not from the double nearest to it, so that times on
// an epoch (1.7e9 s, or milliseconds read as seconds) keep every digit.
using RawNumbers = std::map<std::string, std::string>;

class RawNumberSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit RawNumberSax(RawNumbers* out) : out_(out) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return record(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return record(std::to_string(v)); }
  bool number_float(number_float_t, const string_t& s) override { return record(s); }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool record(const std::string& text) {
    if (depth_ == 1) (*out_)[key_] = text;
    return true;
  }
  RawNumbers* out_;
  int depth_ = 0;
  std::string key_;
};

// A JSON number's text (seconds, >= 0) as whole nanoseconds, rounded half
// up; nullopt for a negative number or one above kMaxTimeS.
std::optional<Ns> decimal_ns(std::string_view t) {
  std::string digits;  // significant digits, leading zeros dropped
  int64_t exponent = 9;
  size_t i = 0;
  bool fraction = false;
  if (t.empty() || t[0] == '-') return std::nullopt;
  for (; i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.'); ++i) {
    if (t[i] == '.') {
      fraction = true;
      continue;
    }
    if (fraction) --exponent;
    if (!digits.empty() || t[i] != '0') digits += t[i];
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    int64_t e = 0, sign = 1;
    if (++i < t.size() && (t[i] == '+' || t[i] == '-')) sign = t[i++] == '-' ? -1 : 1;
    for (; i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])); ++i)
      e = std::min<int64_t>(e * 10 + (t[i] - '0'), 100000);
    exponent += sign * e;
  }
  if (digits.empty()) return Ns(0);
  if (exponent < 0) {
    // Drop the digits below a nanosecond, rounding half up.
    const int64_t drop = -exponent;
    if (drop > int64_t(digits.size())) return Ns(0);
    const bool up = digits[digits.size() - size_t(drop)] >= '5';
    digits.resize(digits.size() - size_t(drop));
    Ns v = 0;
    for (char c : digits) v = v * 10 + (c - '0');
    return v + (up ? 1 : 0);
  }
  // At most 30 digits of nanoseconds (kMaxTimeS = 1e20 s is 1e29 ns).
  if (int64_t(digits.size()) + exponent > 30) return std::nullopt;
  Ns v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  for (int64_t k = 0; k < exponent; ++k) v *= 10;
  if (v > Ns(kMaxTimeS) * 1000000000) return std::nullopt;
  return v;
}

double seconds_of(Ns ns) {
  return double(ns) / 1e9;
}

// One line's fields, checked as they are read.
class RequestLineReader {
 public:
  RequestLineReader(const std::string& shown, int line, const nlohmann::json& j)
      : shown_(shown), line_(line), j_(j) {}

  // The value of the one of `names` present (null when none is; two present
  // are refused: they could disagree), its name then in name().
  const nlohmann::json* find(std::initializer_list<const char*> names) const {
    const nlohmann::json* got = nullptr;
    const char* got_name = nullptr;
    for (const char* n : names) {
      auto it = j_.find(n);
      if (it == j_.end()) continue;
      if (got) {
        throw ConfigError(where(), n, fmt::format("one of {} on a line", join_names(names)),
                          fmt::format("both {} and {}", got_name, n));
      }
      got = &*it;
      got_name = n;
    }
    name_ = got_name ? got_name : *names.begin();
    return got;
  }

  const nlohmann::json& need(std::initializer_list<const char*> names) const {
    const nlohmann::json* v = find(names);
    if (!v) {
      throw ConfigError(where(), *names.begin(),
                        fmt::format("the key on every request line ({})", join_names(names)),
                        "none");
    }
    return *v;
  }

  // A time in whole nanoseconds, exactly as the line writes it in seconds
  // (`raw`: the numbers' texts, core/experiment/requests_file.cc).
  Ns nanoseconds(std::initializer_list<const char*> names, const RawNumbers& raw) const {
    const nlohmann::json& v = need(names);
    const auto it = raw.find(name_);
    const std::optional<Ns> ns =
        v.is_number() && it != raw.end() ? decimal_ns(it->second) : std::nullopt;
    if (!ns) {
      throw ConfigError(
          where(), name_, fmt::format("a number of seconds from 0 to {:g}", kMaxTimeS),
          shown_text(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    }
    return *ns;
  }

  // A whole number in [lo, kMaxRequestTokens]; `v` one of this line's values.
  int64_t tokens(const nlohmann::json& v, int64_t lo) const {
    const std::string shown =
        shown_text(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    // A JSON integer only: 16.0, "16" and 1e400 are refused, and a value past
    // 64 bits never wraps (nlohmann keeps it as a float or an unsigned).
    const bool whole = v.is_number_integer() &&
                       (v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(kMaxRequestTokens)
                                               : v.get<int64_t>() <= kMaxRequestTokens);
    if (!whole || v.get<int64_t>() < lo) {
      throw ConfigError(
          where(), name_,
          fmt::format("a whole number of tokens from {} to {}", lo, kMaxRequestTokens), shown);
    }
    return v.get<int64_t>();
  }

  const std::string& name() const { return name_; }
  Where where() const { return Where{shown_, line_, 0}; }

 private:
  static std::string join_names(std::initializer_list<const char*> names) {
    std::string s;
    for (const char* n : names) s += (s.empty() ? "" : " or ") + std::string(n);
    return s;
  }

  const std::string& shown_;
  int line_;
  const nlohmann::json& j_;
  mutable std::string name_;
};

// A line's lengths: prompt_len (or input_len) and output_len (generated
// tokens, the prefill's first one included) or decode_len (decode steps).
void read_lengths(const RequestLineReader& r, int64_t context_length, RequestLine* q) {
  q->prompt_len = r.tokens(r.need({"prompt_len", "input_len"}), 0);
  const nlohmann::json& out = r.need({"output_len", "decode_len"});
  if (r.name() == "output_len") {
    // vLLM and SGLang count the prefill's token among the output: a request
    // with a prompt generates at least that one.
    const int64_t n = r.tokens(out, q->prompt_len > 0 ? 1 : 0);
    q->decode_len = q->prompt_len > 0 ? n - 1 : n;
  } else {
    q->decode_len = r.tokens(out, 0);
  }
  const int64_t total = q->prompt_len + q->decode_len;
  if (total == 0) {
    throw ConfigError(r.where(), r.name(), "a request of at least one token",
                      "0 prompt tokens and 0 output tokens");
  }
  // Prompt and output together (the output's tokens: decode steps + 1 when
  // there is a prompt, the last of which is never fed back).
  if (context_length > 0 && total > context_length) {
    throw ConfigError(
        r.where(), "prompt_len",
        fmt::format("a prompt and its decode steps of at most the model's context ({} tokens)",
                    context_length),
        fmt::format("{} + {} = {} tokens", q->prompt_len, q->decode_len, total));
  }
}

// Names the first byte of `bytes` that is not UTF-8, with its line and column.
void check_utf8(std::string_view bytes, const std::string& shown) {
  const size_t bad = invalid_utf8_at(bytes);
  if (bad == std::string_view::npos) return;
  const size_t line_start = bad == 0 ? std::string_view::npos : bytes.rfind('\n', bad - 1);
  const int line = 1 + int(std::count(bytes.begin(), bytes.begin() + ptrdiff_t(bad), '\n'));
  const size_t from = line_start == std::string_view::npos ? 0 : line_start + 1;
  throw ConfigError(Where{shown, line, int(bad - from) + 1}, "workload.arrivals",
                    "UTF-8 text (JSON is UTF-8; convert a Latin-1 or UTF-16 file with iconv)",
                    fmt::format("byte 0x{:02x} at offset {}: '{}'",
                                unsigned(static_cast<unsigned char>(bytes[bad])), bad,
                                shown_text(bytes.substr(from, bad - from + 8), 60)));
}

// The file's bytes, checked: a regular file (a FIFO, a device or a folder is
// named, never opened), not too large.
std::string read_checked(const std::filesystem::path& path, const std::string& shown) {
  const std::string kind = file_kind(path);
  if (kind != "a regular file") {
    throw ConfigError(Where{shown, 0, 0}, "workload.arrivals",
                      "a readable JSONL file of requests (a regular file)",
                      fmt::format("{} at '{}'", kind, shown_text(path.string(), 200)));
  }
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxRequestsFileBytes) {
    throw ConfigError(Where{shown, 0, 0}, "workload.arrivals",
                      fmt::format("a requests file of at most {} MiB", kMaxRequestsFileBytes >> 20),
                      fmt::format("{} bytes", size));
  }
  std::string bytes = read_file(path);
  return bytes;
}

}  // namespace

RequestsFile read_requests_file(const std::filesystem::path& path, const std::string& shown,
                                const RequestsNeeds& needs) {
  return parse_requests(read_checked(path, shown), shown, needs);
}

RequestsFile parse_requests(std::string_view bytes, const std::string& shown,
                            const RequestsNeeds& needs) {
  check_utf8(bytes, shown);
  RequestsFile f;
  f.shown = shown;
  f.sha256 = sha256_hex(bytes);
  std::string_view rest(bytes);
  int no = 0;
  Ns first = 0, prev = 0;
  std::string raw_first, raw_prev;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.size() > kMaxRequestLineBytes) {
      throw ConfigError(Where{shown, no, 0}, "workload.arrivals",
                        fmt::format("a request line of at most {} bytes", kMaxRequestLineBytes),
                        fmt::format("{} bytes", line.size()));
    }
    nlohmann::json j;
    RawNumbers raw;
    try {
      j = nlohmann::json::parse(line);
      RawNumberSax sax(&raw);
      nlohmann::json::sax_parse(line, &sax);
    } catch (const nlohmann::json::exception&) {
      j = nullptr;
    }
    if (!j.is_object()) {
      throw ConfigError(Where{shown, no, 0}, "workload.arrivals", "a JSON object per line",
                        "'" + shown_text(line, 60) + "'");
    }
    const RequestLineReader r(shown, no, j);
    RequestLine q;
    q.line = no;
    if (needs.times) {
      const Ns t = r.nanoseconds({"arrival_time", "timestamp"}, raw);
      if (f.requests.empty()) first = t;
      if (!f.requests.empty() && t < prev) {
        throw ConfigError(
            r.where(), r.name(),
            fmt::format("arrival times in order (at least {} s, the line before's)", raw_prev),
            fmt::format("{} s", raw.at(r.name())));
      }
      if (seconds_of(t - first) > kMaxArrivalSpanS) {
        throw ConfigError(
            r.where(), r.name(),
            fmt::format("arrivals within {:g} s of the first ({} s){}", kMaxArrivalSpanS, raw_first,
                        seconds_of(first) > kEpochMillisecondsLike
                            ? "; the times look like milliseconds: they are read as seconds"
                            : ""),
            fmt::format("{} s, {:g} s after it", raw.at(r.name()), seconds_of(t - first)));
      }
      prev = t;
      raw_prev = raw.at(r.name());
      if (f.requests.empty()) raw_first = raw_prev;
      q.arrival_s = seconds_of(t - first);
    }
    if (needs.lengths) read_lengths(r, needs.context_length, &q);
    f.requests.push_back(q);
  }
  f.first_arrival_s = seconds_of(first);
  return f;
}

}  // namespace moebench
