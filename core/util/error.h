// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// User-facing errors. Anything the user can get wrong (a config file, a trace
// file, a command line) is reported as a moebench::Error: one line that says
// what was expected, what was found and where. Tools print it and exit with
// status 2; they never crash and never leave a half-written result behind.

#include <stdexcept>
#include <string>

namespace moebench {

// A place in user input: a file and, when known, a 1-based line and column.
struct Where {
  std::string file;  // path as the user wrote it, or "<command line>", ...
  int line = 0;      // 0 = unknown
  int column = 0;    // 0 = unknown

  // "file:line:col", "file:line", "file" or "<unknown>".
  std::string str() const;
};

// Base class of every error the user can cause.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration error. Its message always has the shape
//   <file>:<line>:<col>: key '<key>': expected <expected>, found <found>[; did you mean '<hint>'?]
// (the "key '<key>': " part is left out when no key applies).
class ConfigError : public Error {
 public:
  ConfigError(Where where, std::string key, std::string expected, std::string found,
              std::string hint = {});

  const Where& where() const { return where_; }
  const std::string& key() const { return key_; }
  const std::string& expected() const { return expected_; }
  const std::string& found() const { return found_; }
  const std::string& hint() const { return hint_; }

  static std::string format(const Where& where, const std::string& key, const std::string& expected,
                            const std::string& found, const std::string& hint);

 private:
  Where where_;
  std::string key_, expected_, found_, hint_;
};

// A broken invariant inside moebench or one of its components (never the
// user's fault). Carries the component's name when a component caused it.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace moebench
