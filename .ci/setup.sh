#!/usr/bin/env bash
# Installs what kiln needs to build and test on a fresh Debian 12 machine: LLVM 19 (the shared
# library, NVPTX target, FileCheck and lit), fmt, GoogleTest, CMake, Ninja, Open MPI (data-parallel
# ranks), oneDNN (the CPU backend's matmuls), NumPy for the differential tests, onnx and onnxruntime
# for the model zoo, and Python's headers, nanobind and pytest for the Python module. Safe to run
# again; needs root or sudo for apt-get.
set -euo pipefail

packages=(build-essential cmake ninja-build python3 python3-pip python3-dev
          llvm-19-dev llvm-19-tools libfmt-dev libgtest-dev
          libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
          libopenmpi-dev openmpi-bin gnuplot-nox libdnnl-dev)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# NumPy computes the reference results of the end-to-end tests (tests/lit/run).
if ! python3 -c "import numpy" 2>/dev/null; then
  echo "setup: installing numpy for $(command -v python3)"
  python3 -m pip install --quiet numpy 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages numpy
fi
# onnx and onnxruntime write the model zoo's tests and their reference outputs (tests/models).
if ! python3 -c "import onnx, onnxruntime" 2>/dev/null; then
  echo "setup: installing onnx and onnxruntime for $(command -v python3)"
  python3 -m pip install --quiet onnx onnxruntime 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages onnx onnxruntime ||
    echo "setup: warning: could not install onnx and onnxruntime; the model zoo tests will skip, saying so"
fi
# nanobind builds the Python module (python/), pytest runs its tests; scikit-build-core is what
# `pip install .` builds it with (pip fetches its own copy for that, this one is for checks).
if ! python3 -c "import nanobind, pytest" 2>/dev/null; then
  echo "setup: installing nanobind and pytest for $(command -v python3)"
  python3 -m pip install --quiet nanobind pytest 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages nanobind pytest
fi
echo "setup: ok (LLVM $(/usr/lib/llvm-19/bin/llvm-config --version), $(python3 -c 'import numpy; print("numpy", numpy.__version__)'))"
