// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
// Linked with every object of the components' library (baselines/CMakeLists.txt,
// WHOLE_ARCHIVE), so that two components defining one class (a copy of
// baselines/example whose FifoCache was not renamed) fail the build with
// "multiple definition of moebench::FifoCache::victim" instead of the linker
// silently keeping the first. It does nothing when run.
int main() {
  return 0;
}
