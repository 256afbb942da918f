// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// A tool's standard output is part of its result: output that cannot be
// written (a full disk, /dev/full, a closed stdout) is an error, never exit 0.

namespace moebench {

// Call first in main(). A standard stream that is closed when the tool starts
// is opened on a device, so that no file the tool opens takes its number (the
// tool's printing would land in that file): stdin on /dev/null, stdout on
// /dev/full (so that writing to it fails and finish_stdout() says so),
// stderr on /dev/null.
void guard_standard_streams();

// Call last in main(): flushes stdout (C and C++ streams). When anything
// written to it was lost, says so on stderr ("<tool>: error: could not write
// the output to stdout: <why>") and returns 2 if `code` was 0; else `code`.
int finish_stdout(const char* tool, int code);

}  // namespace moebench
