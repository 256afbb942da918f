#!/usr/bin/env bash
# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
# Installs what moebench needs and is missing: Debian packages (after
# apt-get update) and, when Debian's Python packages cannot be used, the same
# Python packages from PyPI for the interpreter that will run the analysis.
# Prints the Python interpreter to use on its last line ("PYTHON=...").
set -euo pipefail

# clang-format: make test checks the C++ format (ci/check_format.py).
# ocl-icd-opencl-dev: Debian's libdnnl-dev only *recommends* it, but its CMake config
# (dnnl-config.cmake -> FindOpenCL) fails without it. scripts/fresh-check proves
# this list on a clean Debian 12 chroot.
PKGS=(cmake g++ make git libdnnl-dev ocl-icd-opencl-dev libtomlplusplus-dev nlohmann-json3-dev
      libbenchmark-dev libgtest-dev libcli11-dev libfmt-dev python3 python3-numpy python3-pandas
      python3-matplotlib python3-pytest clang-format)

# Extra packages named on the command line (make asan / make fuzz add clang).
PKGS+=("$@")

missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "install-deps: error: expected root or sudo to install ${missing[*]}, found neither" >&2
      exit 2
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# Debian's interpreter sees Debian's numpy/pandas/matplotlib; a pyenv
# `python3` on PATH does not. Prefer /usr/bin/python3, else install from PyPI.
py_ok() { "$1" -c "import numpy, pandas, matplotlib, pytest" >/dev/null 2>&1; }
if [ -x /usr/bin/python3 ] && py_ok /usr/bin/python3; then
  PY=/usr/bin/python3
elif command -v python3 >/dev/null 2>&1 && py_ok "$(command -v python3)"; then
  PY="$(command -v python3)"
else
  PY="$(command -v python3 || echo /usr/bin/python3)"
  echo "install-deps: installing numpy pandas matplotlib pytest for $PY from PyPI" >&2
  "$PY" -m pip install --quiet numpy pandas matplotlib pytest >&2
fi
echo "PYTHON=$PY"
