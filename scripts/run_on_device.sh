#!/usr/bin/env bash
# Runs kiln's tests and benchmarks on an offline GPU machine from a bundle that
# scripts/device_bundle.sh made (this file is copied into it as .bundle/run_on_device.sh).
#
#   bash .bundle/run_on_device.sh [--dry-run] [--steps LIST] [--budget-s N] [--peers-args "ARGS"]
#
# Unpacks the binaries to $KILN_WORK (/tmp/kbundle) and the bundled .debs to $KDEPS (/tmp/kdeps;
# with `dpkg -x`, never into /), puts those libraries first on LD_LIBRARY_PATH for kiln's binaries
# only (the frameworks' Python keeps the machine's own), adds the NVIDIA pip wheels' cuDNN, cuBLAS
# and NCCL folders, runs ldd on every binary, then the steps, each logged, each under a timeout,
# continuing past failures:
#   env        GPU, driver, CUDA toolkit, Python frameworks, libraries (always first)
#   unit       the GoogleTest binaries that reach the GPU, in parallel: kiln_runtime_tests whole,
#              kiln_codegen_tests' GPU tests ($KILN_CODEGEN_FILTER), kiln_api_tests' ($KILN_API_FILTER),
#              the API quickstart (KILN_UNIT_ALL=1: every binary, each whole)
#   lit        the lit suite with the bundled lit.py and FileCheck (its cuda-gpu tests on the GPU)
#   sanitizer  compute-sanitizer memcheck on the CUDA tests of kiln_runtime_tests/kiln_codegen_tests
#              ($KILN_SANITIZER_FILTER) and on `kiln run --backend cuda` of every example, once that runs;
#              racecheck and synccheck on the shared-memory kernels' tests (Gpu*)
#   bench      `kiln bench FILE --backend cuda --json` on every example and large case
#   train      the training-step cases (bench/peers/train_cases.py): kiln's step (kiln train
#              --print-step) checked with `kiln run` and timed with `kiln bench`, by train_kiln.py;
#              then the same steps through jax.jit and torch.compile (harness.py --group train;
#              KILN_TRAIN_PEERS=jax or torch for one of them)
#   peers      bench/peers/harness.py: the other cases through jax.jit and torch.compile
#   onnx       `kiln onnx-test --backend cuda`: the tier-1/2 node tests and the other suites of the
#              machine's pip onnx against tests/onnx's pass lists, then the model zoo (tests/models:
#              small and real sizes, made there with onnx and checked against onnxruntime); last, as
#              the longest and least predictable step, with what the budget leaves
#   compare    bench/compare.py: one Markdown table of both
# --dry-run stops after `env` and prints the commands of the other steps. `--steps env,train,compare`
# gets the training-step table alone in one call. Without a GPU
# (no nvidia-smi, or it lists none) the GPU steps are skipped with a message.
#
# Results go to $OUT (default /tmp/kiln-device-out), as at most 8 files (the device tool returns no
# more): summary.md (steps, missing libraries, the table), RESULTS.md, kiln_bench.jsonl,
# peers.jsonl, sanitizer.log, steps.log (every step's log, concatenated) and logs.tar.gz.
set -u
set -o pipefail

B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-/tmp/kiln-device-out}
WORK=${KILN_WORK:-/tmp/kbundle}
KDEPS=${KDEPS:-/tmp/kdeps}
STEPS="env,unit,onnx,lit,sanitizer,bench,peers,train,compare"
BUDGET=${KILN_DEVICE_BUDGET_S:-560}   # the device tool stops a command at 600 s
PEERS_ARGS=${PEERS_ARGS:-}
DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --steps) STEPS=$2; shift ;;
    --steps=*) STEPS=${1#--steps=} ;;
    --budget-s) BUDGET=$2; shift ;;
    --budget-s=*) BUDGET=${1#--budget-s=} ;;
    --peers-args) PEERS_ARGS=$2; shift ;;
    --peers-args=*) PEERS_ARGS=${1#--peers-args=} ;;
    -h|--help) sed -n '2,30p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run_on_device: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

START=$SECONDS
rm -rf "$WORK/logs"
mkdir -p "$OUT" "$WORK/logs"
RUNLOG=$WORK/logs/00-run.log
: > "$RUNLOG"
log() { echo "[run_on_device +$((SECONDS - START))s] $*" | tee -a "$RUNLOG"; }
STATUS=()   # "step|status|seconds|note"
has_step() { [[ ",$STEPS," == *",$1,"* ]]; }
manifest() { sed -n "s/^$1: //p" "$B/MANIFEST.txt" 2>/dev/null | head -1; }

# --- unpack --------------------------------------------------------------------------------------
log "bundle $B ($(manifest commit)), work dir $WORK, deps $KDEPS, out $OUT, budget ${BUDGET}s, steps $STEPS"
if [ ! -f "$B/bin.tar.xz" ]; then
  log "FATAL: $B/bin.tar.xz is missing: build the bundle with scripts/device_bundle.sh BUILD_DIR"
  exit 1
fi
tar -C "$WORK" -xJf "$B/bin.tar.xz" 2>/dev/null ||
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$B/bin.tar.xz" "$WORK" ||
  { log "FATAL: cannot unpack bin.tar.xz"; exit 1; }
mkdir -p "$KDEPS"
for d in "$B"/debs/*.deb; do
  [ -e "$d" ] || continue
  if command -v dpkg >/dev/null; then
    dpkg -x "$d" "$KDEPS" || log "WARNING: dpkg -x $(basename "$d") failed"
  else  # no dpkg: a .deb is an ar archive holding data.tar.*
    python3 - "$d" "$KDEPS" <<'PY' || log "WARNING: could not unpack $(basename "$d") without dpkg"
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
  fi
done
log "unpacked $(ls "$B"/debs/*.deb 2>/dev/null | wc -l) .debs: $(ls "$B"/debs 2>/dev/null | sed 's/_.*//' | tr '\n' ' ')"

BIN=$WORK/bin
# Sources the tests read (examples/, tests/lit/): the repository the bundle sits in, else the copy in it.
if [ -d "$B/../examples" ] && [ -d "$B/../tests/lit" ]; then SRC=$(cd "$B/.." && pwd); else SRC=$B/src; fi
CASES=$B/src/cases          # the generated large cases (cases.py --emit-kiln)
PEERS_DIR=$SRC/bench/peers; [ -f "$PEERS_DIR/harness.py" ] || PEERS_DIR=$B/src/bench/peers
COMPARE=$SRC/bench/compare.py; [ -f "$COMPARE" ] || COMPARE=$B/src/bench/compare.py
# The test binaries have the build machine's source path compiled in (KILN_SOURCE_DIR): make it reach SRC.
BUILT_SRC=$(manifest source_dir)
if [ -n "$BUILT_SRC" ] && [ ! -e "$BUILT_SRC" ]; then
  mkdir -p "$(dirname "$BUILT_SRC")" 2>/dev/null && ln -s "$SRC" "$BUILT_SRC" 2>/dev/null &&
    log "linked $BUILT_SRC -> $SRC (the tests' compiled-in source dir)" ||
    log "WARNING: cannot link $BUILT_SRC -> $SRC: tests that read examples/ may fail"
fi

# --- library paths (kiln's binaries only) ------------------------------------------------------------
# lib/: kiln's own shared libraries (libkiln.so, which kiln_api_tests links), then the .debs'.
KLIB="$WORK/lib:$KDEPS/usr/lib/x86_64-linux-gnu:$KDEPS/lib/x86_64-linux-gnu"
# What this machine lacks without the bundle: ldd with the machine's own paths.
MISSING_ON_DEVICE=$(for b in "$WORK"/bin/* "$WORK"/llvm/*; do [ -f "$b" ] && [ -x "$b" ] && ldd "$b" 2>/dev/null; done |
  awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
NVLIBS=$(python3 - <<'PY' 2>>"$RUNLOG"
import os, sys
want = ("libcudnn", "libcublas", "libnccl", "libcudart", "libnvrtc", "libnvJitLink")
dirs = {}
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception as e:
    print(f"no nvidia pip packages importable: {e}", file=sys.stderr)
    roots = []
for root in roots:
    for d, _, files in os.walk(root):
        libs = sorted(f for f in files if f.startswith(want) and ".so" in f)
        if libs:
            dirs[d] = libs
for d, libs in sorted(dirs.items()):
    print(f"NVIDIA wheel libs in {d}: {' '.join(libs)}", file=sys.stderr)
print(":".join(sorted(dirs)))
PY
)
CUDA_DRIVER_DIR=""
if ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1 "; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/compat; do
    [ -e "$d/libcuda.so.1" ] && { CUDA_DRIVER_DIR=$d; break; }
  done
fi
KILN_LD_LIBRARY_PATH="$KLIB${NVLIBS:+:$NVLIBS}${CUDA_DRIVER_DIR:+:$CUDA_DRIVER_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# ptxas and libdevice for the PTX checks: the toolkit on PATH, else /usr/local/cuda.
if [ -z "${KILN_CUDA_HOME:-}" ]; then
  if command -v ptxas >/dev/null; then KILN_CUDA_HOME=$(dirname "$(dirname "$(command -v ptxas)")")
  elif [ -x /usr/local/cuda/bin/ptxas ]; then KILN_CUDA_HOME=/usr/local/cuda; fi
fi
export KILN_CUDA_HOME=${KILN_CUDA_HOME:-}
export KILN_CACHE_DIR=$WORK/kiln-cache
export B WORK KDEPS OUT BIN SRC CASES PEERS_DIR COMPARE KILN_LD_LIBRARY_PATH PEERS_ARGS
k() { LD_LIBRARY_PATH="$KILN_LD_LIBRARY_PATH" "$@"; }   # run one of kiln's binaries
export -f k
# kiln for Python scripts that run it (train_kiln.py): the bundled libraries for kiln alone.
KILN_SH=$WORK/kiln.sh
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$KILN_LD_LIBRARY_PATH" "$BIN/kiln" > "$KILN_SH"
chmod +x "$KILN_SH"
export KILN_SH

HAVE_GPU=0
if ! command -v nvidia-smi >/dev/null; then
  GPU_WHY="no nvidia-smi: skipping GPU steps"
elif ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
  GPU_WHY="nvidia-smi lists no GPU: skipping GPU steps"
else
  HAVE_GPU=1
  GPU_NAME=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
fi

# --- steps ------------------------------------------------------------------------------------------
RESERVE=25   # seconds kept for compare, the summary and packing the logs
run_step() {  # run_step NAME LIMIT_S FUNCTION; KILN_<NAME>_LIMIT_S overrides LIMIT_S
  local name=$1 limit=$2 fn=$3 left t0 rc st logf override
  override=KILN_${name^^}_LIMIT_S
  limit=${!override:-$limit}
  logf=$WORK/logs/$name.log
  left=$((BUDGET - (SECONDS - START) - RESERVE))
  [ "$name" = compare ] && left=$((left + RESERVE - 5))
  if [ "$left" -lt 10 ]; then
    STATUS+=("$name|skipped|0|the ${BUDGET}s budget is spent"); log "step $name: skipped (budget spent)"; return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  log "step $name: start (timeout ${limit}s, log $logf)"
  t0=$SECONDS
  STEP_LIMIT=$limit STEP_START=$SECONDS timeout -k 10 "$limit" bash -o pipefail -c "$fn" > "$logf" 2>&1
  rc=$?
  case $rc in 0) st=ok ;; 124|137) st="TIMEOUT after ${limit}s" ;; *) st="FAILED (exit $rc)" ;; esac
  STATUS+=("$name|$st|$((SECONDS - t0))|$(grep -v '^\s*$' "$logf" | tail -1 | cut -c1-150 | tr '|' '/')")
  log "step $name: $st in $((SECONDS - t0))s"
  tail -n 4 "$logf" | sed 's/^/    /'
}

step_env() {
  echo "== machine"; uname -a; nproc; free -g | head -2
  echo "== GPU"
  if command -v nvidia-smi >/dev/null; then nvidia-smi 2>&1 | head -20; else echo "no nvidia-smi on PATH"; fi
  echo "== CUDA toolkit: KILN_CUDA_HOME=${KILN_CUDA_HOME:-unset}"
  [ -n "$KILN_CUDA_HOME" ] && { "$KILN_CUDA_HOME/bin/ptxas" --version | tail -1; ls "$KILN_CUDA_HOME"/nvvm/libdevice/ 2>&1; }
  command -v compute-sanitizer || echo "no compute-sanitizer on PATH"
  echo "== libcuda"; ldconfig -p | grep -E "libcuda\.so" || echo "libcuda.so.1 not in the ldconfig cache"
  echo "== Python"; python3 - <<'PY'
import sys
print(sys.executable, sys.version.split()[0])
for name in ("numpy", "torch", "jax", "jaxlib", "triton"):
    try:
        mod = __import__(name)
        print(f"{name} {getattr(mod, '__version__', '?')}")
    except Exception as e:
        print(f"{name}: not importable ({e})")
PY
  echo "== kiln"; k "$BIN/kiln" --version; k "$BIN/kiln" --help
  echo "== where kiln's libraries come from (LD_LIBRARY_PATH=$KILN_LD_LIBRARY_PATH)"
  k ldd "$BIN/kiln" | grep "=>" | grep -vE "lib(c|m|gcc_s|stdc\+\+)\.so" | awk '{print "  " $1 " -> " $3}'
  echo "== ldd: libraries kiln's binaries cannot find"
  local bad=0
  for b in "$BIN"/* "$WORK"/llvm/*; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    miss=$(k ldd "$b" 2>&1 | grep "not found")
    if [ -n "$miss" ]; then echo "$(basename "$b"): $miss"; bad=1; fi
  done
  [ $bad = 0 ] && echo "none: every binary resolves all its libraries"
  return $bad
}
# The GPU-reaching tests of kiln_codegen_tests (its other 600 are CPU codegen tests CI runs).
CODEGEN_FILTER=${KILN_CODEGEN_FILTER:-*Cuda*:*CUDA*:*Gpu*:*GPU*:*Nvptx*:KernelReport.*}
export CODEGEN_FILTER
# The public API's tests that compile for cuda or ask `auto` (the rest are CPU tests CI runs).
API_FILTER=${KILN_API_FILTER:-ApiCompile.*:*Cuda*:*Gpu*:*Device*}
export API_FILTER
step_unit() {
  local rc=0 t name filter
  local -a names=() pids=()
  for t in "$BIN"/kiln_*_tests "$BIN"/kiln_api_quickstart; do
    [ -x "$t" ] || continue
    name=$(basename "$t") filter='*'
    if [ "${KILN_UNIT_ALL:-0}" != 1 ]; then
      case $name in
        kiln_runtime_tests|kiln_api_quickstart) ;;
        kiln_codegen_tests) filter=$CODEGEN_FILTER ;;
        kiln_api_tests) filter=$API_FILTER ;;
        *) echo "$name: CPU-only, left to CI (KILN_UNIT_ALL=1 runs it)"; continue ;;
      esac
    fi
    k "$t" --gtest_color=no --gtest_filter="$filter" > "$WORK/unit-$name.log" 2>&1 &
    names+=("$name") pids+=($!)
  done
  [ ${#names[@]} -gt 0 ] || { echo "no test binaries in the bundle (build them before scripts/device_bundle.sh)"; return 1; }
  local summary="" i st
  for i in "${!names[@]}"; do
    wait "${pids[$i]}"; st=$?
    [ $st = 0 ] || rc=1
    echo "===== ${names[$i]} (exit $st)"
    grep -vE '^\[ +(RUN|OK) +\]' "$WORK/unit-${names[$i]}.log"
    summary+="${names[$i]}: exit $st $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' "$WORK/unit-${names[$i]}.log" | tr -s ' ' | tr '\n' ' ')"$'\n'
  done
  echo "===== summary"; printf '%s' "$summary"
  return $rc
}
step_onnx() {
  # The node tests: Debian's libonnx-testdata where installed, else the bundle's copy of the tier
  # lists' tests and the `simple` suite (the pytorch suites are left to CI: 12 MB).
  local rc=0 data=/usr/share/libonnx-testdata/data jobs s
  jobs=$(nproc)
  if [ ! -d "$data/node" ] && [ -f "$B/onnx-data.tar.xz" ]; then
    data=$WORK/onnx-data
    mkdir -p "$data" && tar -C "$data" -xJf "$B/onnx-data.tar.xz"
  fi
  if [ -d "$data/node" ]; then
    # One test alone first: how long a process takes to start CUDA, compile and run one op.
    echo "===== one node test alone: $( { time -p k "$BIN/kiln" onnx-test "$data/node/test_abs" --backend cuda; } 2>&1 | tr '\n' ' ')"
    echo "===== node tests ($data/node), tier 1 and 2, on cuda (each test at most 60 s)"
    # Through a file, so that what finished is kept if the step's timeout stops the run.
    k "$BIN/kiln" onnx-test "$data/node" --backend cuda --jobs "$jobs" --timeout 60 --tests "$SRC/tests/onnx/tier1.txt" \
      --tests "$SRC/tests/onnx/tier2.txt" --expect-pass "$SRC/tests/onnx/expected_pass_cuda.txt" > "$WORK/onnx-node.log" 2>&1 || rc=1
    grep -vE '^PASS ' "$WORK/onnx-node.log"; echo "$(grep -c '^PASS ' "$WORK/onnx-node.log") PASS lines"
    local suites=()
    for s in pytorch-converted pytorch-operator simple; do [ -d "$data/$s" ] && suites+=("$data/$s"); done
    echo "===== ${suites[*]##*/} on cuda"
    # Without --expect-pass where the bundle carries only some suites (its list names all three).
    if [ ${#suites[@]} = 3 ]; then
      k "$BIN/kiln" onnx-test "${suites[@]}" --backend cuda --jobs "$jobs" \
        --expect-pass "$SRC/tests/onnx/expected_pass_suites.txt" | grep -vE '^PASS ' || rc=1
    else
      k "$BIN/kiln" onnx-test "${suites[@]}" --backend cuda --jobs "$jobs" | grep -vE '^PASS ' || rc=1
    fi
  else
    echo "no ONNX node tests: no libonnx-testdata here and no onnx-data.tar.xz in the bundle"; rc=1
  fi
  local scale m folders
  for scale in small real; do
    echo "===== model zoo, $scale sizes, on cuda (tests/models, checked against onnxruntime)"
    python3 "$SRC/tests/models/make_models.py" --scale $scale --out "$WORK/zoo_$scale" --no-timing 2>&1 | tail -3 || { rc=1; continue; }
    folders=()
    for m in "$WORK/zoo_$scale"/*/; do folders+=("${m%/}"); done
    k "$BIN/kiln" onnx-test "${folders[@]}" --backend cuda --jobs 4 --timeout 240 \
      --expect-pass "$SRC/tests/models/expected_pass.txt" || rc=1
  done
  return $rc
}
step_sanitizer() {
  # memcheck on every GPU test and example; racecheck and synccheck (shared memory, bar.sync) on the
  # kernels that use them. The tools run side by side: each is one process on its own cores.
  local rc=0 filter=${KILN_SANITIZER_FILTER:-*Cuda*:*CUDA*:*Gpu*:*GPU*} tool t
  command -v compute-sanitizer >/dev/null || { echo "no compute-sanitizer on PATH"; return 1; }
  local -a jobs=()
  for t in kiln_runtime_tests kiln_codegen_tests; do
    [ -x "$BIN/$t" ] || continue
    # The tests provoke API errors on purpose (out of memory, bad PTX): only device-side errors count.
    k compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 --print-limit 50 "$BIN/$t" --gtest_filter="$filter" \
      > "$WORK/san-memcheck-$t.log" 2>&1 &
    jobs+=("memcheck-$t")
  done
  for tool in racecheck synccheck; do
    k compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 50 "$BIN/kiln_codegen_tests" \
      --gtest_filter='Gpu*' > "$WORK/san-$tool-kiln_codegen_tests.log" 2>&1 &
    jobs+=("$tool-kiln_codegen_tests")
  done
  if k "$BIN/kiln" run --backend cuda "$SRC/examples/softmax.kiln" >/dev/null 2>&1; then
    for f in "$SRC"/examples/*.kiln; do
      echo "===== memcheck kiln run --backend cuda $(basename "$f")"
      k compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 "$BIN/kiln" run --backend cuda "$f" \
        > "$WORK/san-one.log" 2>&1 || { rc=1; cat "$WORK/san-one.log"; }
      tail -1 "$WORK/san-one.log"
    done
  else
    echo "kiln run --backend cuda fails here, so no kiln process is sanitized: $(k "$BIN/kiln" run --backend cuda "$SRC/examples/softmax.kiln" 2>&1 | head -1)"
    rc=1
  fi
  wait
  for j in "${jobs[@]}"; do
    echo "===== compute-sanitizer --tool ${j%%-*} ${j#*-}"
    grep -vE '^\[ +(RUN|OK) +\]' "$WORK/san-$j.log" | tail -60
    # memcheck and synccheck end with "ERROR SUMMARY: 0 errors", racecheck with "RACECHECK SUMMARY: 0 hazards".
    grep -qE "(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards)" "$WORK/san-$j.log" || rc=1
  done
  return $rc
}
step_bench() {
  local rc=0
  for f in "$CASES"/*.kiln "$SRC"/examples/*.kiln; do
    echo "===== kiln bench $(basename "$f")"
    k timeout 60 "$BIN/kiln" bench "$f" --backend cuda --json > "$WORK/bench-one.jsonl" 2> "$WORK/bench-one.err"
    r=$?; cat "$WORK/bench-one.err"; cat "$WORK/bench-one.jsonl" | tee -a "$OUT/kiln_bench.jsonl"
    [ $r = 0 ] || { echo "exit $r"; rc=1; }
  done
  return $rc
}
step_train() {
  # kiln first (its check runs the NumPy reference too), then each framework gets half of what is
  # left, less a margin for the case running at the deadline.
  local rc=0 per
  PYTHONUNBUFFERED=1 python3 "$PEERS_DIR/train_kiln.py" --kiln "$KILN_SH" --backend cuda --work "$WORK/train" \
    --out "$OUT/kiln_bench.jsonl" 2>&1 | cut -c1-400 || rc=1
  per=$(( (STEP_LIMIT - (SECONDS - STEP_START) - 30) / 2 ))
  [ $per -lt 20 ] && per=20
  PYTHONUNBUFFERED=1 python3 "$PEERS_DIR/harness.py" --framework "${KILN_TRAIN_PEERS:-all}" --group train --out "$OUT/peers.jsonl" \
    --budget-s "$per" 2>&1 | cut -c1-400 || rc=1
  return $rc
}
step_peers() {
  # Each framework gets half of what is left, less a margin for the case running at the deadline.
  # The training cases are the train step's; --peers-args "--group ..." overrides.
  local per=$(( (STEP_LIMIT - 40) / 2 ))
  [ $per -lt 20 ] && per=20
  PYTHONUNBUFFERED=1 python3 "$PEERS_DIR/harness.py" --framework all --group large,example --out "$OUT/peers.jsonl" \
    --budget-s "$per" $PEERS_ARGS 2>&1 | cut -c1-400
}
step_compare() {
  python3 "$COMPARE" --kiln "$OUT/kiln_bench.jsonl" --peers "$OUT/peers.jsonl" \
    ${GPU_NAME:+--machine "$GPU_NAME"} -o "$OUT/RESULTS.md" && cat "$OUT/RESULTS.md"
}
step_lit() {
  [ -x "$WORK/llvm/FileCheck" ] && [ -f "$WORK/lit/lit.py" ] || { echo "no FileCheck/lit.py in the bundle: lit not run"; return 1; }
  mkdir -p "$WORK/lit-site"
  cat > "$WORK/lit-site/lit.site.cfg.py" <<EOF
config.kiln_bin_dir = "$BIN"
config.llvm_tools_dir = "$WORK/llvm"
config.kiln_source_dir = "$SRC"
config.kiln_have_onnx = "OFF"
config.onnx_node_tests = ""
config.protoc = ""
lit_config.load_config(config, "$SRC/tests/lit/lit.cfg.py")
EOF
  LD_LIBRARY_PATH="$KILN_LD_LIBRARY_PATH" python3 "$WORK/lit/lit.py" -sv -j "$(nproc)" "$WORK/lit-site"
}
export GPU_NAME=${GPU_NAME:-}
export -f step_env step_unit step_onnx step_sanitizer step_bench step_train step_peers step_compare step_lit

: > "$OUT/kiln_bench.jsonl"
: > "$OUT/peers.jsonl"
run_step env 60 step_env
if [ $DRY = 1 ]; then
  grep -v '^\s*$' "$WORK/logs/env.log" | tail -30
  log "dry run: stopping after env. GPU: ${GPU_NAME:-none ($GPU_WHY)}. Steps a real run would take, in order:"
  cat <<EOF
  unit       $BIN/kiln_runtime_tests, kiln_codegen_tests --gtest_filter=$CODEGEN_FILTER, kiln_api_tests --gtest_filter=$API_FILTER and kiln_api_quickstart, LD_LIBRARY_PATH=$KILN_LD_LIBRARY_PATH
  lit        python3 $WORK/lit/lit.py -s $WORK/lit-site (FileCheck from $WORK/llvm)
  sanitizer  compute-sanitizer --tool memcheck on kiln_runtime_tests/kiln_codegen_tests --gtest_filter=${KILN_SANITIZER_FILTER:-*Cuda*:*CUDA*:*Gpu*:*GPU*}, and on kiln run --backend cuda per example
  bench      $BIN/kiln bench FILE --backend cuda --json for $CASES/*.kiln and $SRC/examples/*.kiln -> $OUT/kiln_bench.jsonl
  train      python3 $PEERS_DIR/train_kiln.py --kiln $KILN_SH --backend cuda --work $WORK/train --out $OUT/kiln_bench.jsonl;
             python3 $PEERS_DIR/harness.py --framework all --group train --out $OUT/peers.jsonl
  peers      python3 $PEERS_DIR/harness.py --framework all --group large,example --out $OUT/peers.jsonl $PEERS_ARGS
  onnx       $BIN/kiln onnx-test (node tests, suites, model zoo small and real) --backend cuda
  compare    python3 $COMPARE --kiln $OUT/kiln_bench.jsonl --peers $OUT/peers.jsonl -o $OUT/RESULTS.md
EOF
  exit 0
fi
has_step unit && run_step unit 100 step_unit
if [ $HAVE_GPU = 1 ]; then
  has_step lit && run_step lit 60 step_lit
  has_step sanitizer && run_step sanitizer 90 step_sanitizer
  has_step bench && run_step bench 60 step_bench
  has_step train && run_step train 120 step_train
  has_step peers && run_step peers 150 step_peers
  # Last: the ONNX suites on cuda are the longest and least predictable step (each test a process
  # with its own CUDA context); whatever the budget leaves goes to them.
  has_step onnx && run_step onnx 200 step_onnx
else
  log "$GPU_WHY"
  for s in onnx sanitizer bench peers train; do has_step $s && STATUS+=("$s|skipped|0|$GPU_WHY"); done
  has_step lit && run_step lit 60 step_lit
fi
has_step compare && run_step compare 20 step_compare

# --- summary and logs -------------------------------------------------------------------------------
{
  echo "# kiln on ${GPU_NAME:-a machine without GPU} ($(date -u +%Y-%m-%dT%H:%MZ), bundle $(manifest commit))"
  echo
  echo "| step | status | seconds | last line of its log |"
  echo "|---|---|---:|---|"
  for s in "${STATUS[@]}"; do IFS='|' read -r n st sec last <<< "$s"; echo "| $n | $st | $sec | \`$last\` |"; done
  echo
  echo "Libraries this machine lacks (the bundle supplies them): ${MISSING_ON_DEVICE:-none}"
  echo "NVIDIA wheel library dirs: ${NVLIBS:-none found}; libcuda dir added: ${CUDA_DRIVER_DIR:-none (in the ldconfig cache)}"
  echo
  [ -s "$OUT/RESULTS.md" ] && cat "$OUT/RESULTS.md"
} > "$OUT/summary.md"
[ -f "$WORK/logs/sanitizer.log" ] && cp "$WORK/logs/sanitizer.log" "$OUT/sanitizer.log"
for f in "$WORK"/logs/*.log; do echo "######## $(basename "$f")"; cat "$f"; done > "$OUT/steps.log"
tar -C "$WORK" -czf "$OUT/logs.tar.gz" logs 2>/dev/null
for f in kiln_bench.jsonl peers.jsonl; do [ -s "$OUT/$f" ] || rm -f "$OUT/$f"; done
log "done in $((SECONDS - START))s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
cat "$OUT/summary.md"
