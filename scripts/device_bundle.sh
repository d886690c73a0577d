#!/usr/bin/env bash
# Builds a relocatable bundle of kiln for an offline GPU machine (shared/notes/device.md): the
# binaries of a Release build, the shared libraries they need as Debian packages, FileCheck and
# lit for the lit suite, the examples, the generated large benchmark cases, the peers' harness,
# and run_on_device.sh, which unpacks and runs it all there.
#
#   scripts/device_bundle.sh BUILD_DIR [DEST]       (DEST defaults to .bundle/ in the repository)
#
# Then, on the GPU machine, from the repository root: bash .bundle/run_on_device.sh
# (with the device tool: carry [".bundle"], command "bash .bundle/run_on_device.sh").
#
# Layout of DEST:
#   run_on_device.sh   scripts/run_on_device.sh
#   MANIFEST.txt       commit, build, compiled-in source dir, packages, files and sizes
#   bin.tar.xz         bin/ (kiln, the GPU-reaching kiln_{runtime,codegen,api}_tests -- every one with
#                      KILN_BUNDLE_TESTS=all --, kiln_api_quickstart: stripped), lib/ (libkiln.so),
#                      llvm/ (FileCheck, not, count, split-file), lit/ (lit.py and its package)
#   debs/*.deb         the Debian packages of every library ldd finds that is not in BASE_PACKAGES
#                      (apt-get download; cached in $KILN_DEB_CACHE)
#   src/               cases/*.kiln (generated); outside the repository also examples/, tests/lit/,
#                      bench/peers/, bench/compare.py
#   onnx-data.tar.xz   the ONNX node tests of tests/onnx/tier{1,2}.txt and the `simple` suite from
#                      libonnx-testdata (1.2 MB; the GPU machine's pip onnx carries no test data)
# The device tool carries at most 64 MiB (working tree included): the script fails above 64 MiB.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 2; }
BUILD=$(cd "$1" && pwd)
DEST=${2:-$ROOT/.bundle}
LIMIT_MIB=64
# Present on any Linux that runs Python and the NVIDIA stack; never shipped (an old libstdc++ or libc
# first on the path would break the machine's newer programs).
BASE_PACKAGES=" libc6 libstdc++6 libgcc-s1 zlib1g liblzma5 "
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-19/bin}
LIT_DIR=${LIT_DIR:-/usr/lib/llvm-19/build/utils/lit}
DEB_CACHE=${KILN_DEB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln-debs}

say() { echo "device_bundle: $*"; }
die() { echo "device_bundle: error: $*" >&2; exit 1; }

[ -x "$BUILD/tools/kiln" ] || die "$BUILD/tools/kiln not found: build first (cmake --build $BUILD)"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
source_dir=$(sed -n 's/^kiln_SOURCE_DIR:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
sanitize=$(sed -n 's/^KILN_SANITIZE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
[ "$build_type" = Release ] || say "WARNING: $BUILD is a '$build_type' build; benchmarks want Release"
[ "$sanitize" = ON ] && die "$BUILD is a sanitizer build (KILN_SANITIZE=ON): its binaries need libasan; use a Release build"

rm -rf "$DEST"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/llvm" "$DEST/debs" "$DEST/src"

# --- binaries (stripped) ---------------------------------------------------------------------------
bins=("$BUILD/tools/kiln")
# The test binaries that reach the GPU (run_on_device.sh's unit step); the others are CPU tests CI
# runs, and all of them do not fit the 64 MiB beside LLVM's packages. KILN_BUNDLE_TESTS=all takes all.
wanted=${KILN_BUNDLE_TESTS:-runtime codegen api}
for t in "$BUILD"/tests/kiln_*_tests; do
  part=${t##*/kiln_}; part=${part%_tests}
  [ -x "$t" ] && { [ "$wanted" = all ] || [[ " $wanted " == *" $part "* ]]; } && bins+=("$t")
done
[ -x "$BUILD/tests/kiln_api_quickstart" ] && bins+=("$BUILD/tests/kiln_api_quickstart")
[ ${#bins[@]} -gt 1 ] || say "WARNING: no test binaries in $BUILD/tests (build them: cmake --build $BUILD): bundling kiln alone"
for b in "${bins[@]}"; do
  cp "$b" "$STAGE/bin/"
  strip --strip-unneeded "$STAGE/bin/$(basename "$b")"
done
if [ -x "$LLVM_BIN/FileCheck" ] && [ -f "$LIT_DIR/lit.py" ]; then
  for t in FileCheck not count split-file; do [ -x "$LLVM_BIN/$t" ] && cp "$LLVM_BIN/$t" "$STAGE/llvm/" && strip "$STAGE/llvm/$t"; done
  mkdir -p "$STAGE/lit"
  cp "$LIT_DIR/lit.py" "$STAGE/lit/"
  (cd "$LIT_DIR" && find lit -name '*.py' -not -path '*/__pycache__/*' -print0 | xargs -0 cp --parents -t "$STAGE/lit/")
else
  say "WARNING: no FileCheck/lit.py under $LLVM_BIN and $LIT_DIR (llvm-19-tools): the lit suite will not run there"
fi
# kiln's own shared libraries (libkiln.so) go to lib/, which run_on_device.sh puts first on the path.
mkdir -p "$STAGE/lib"
for b in "${bins[@]}"; do
  ldd "$b" | awk -v build="$BUILD/" '$3 ~ "^" build {print $3}'
done | sort -u | while read -r lib; do
  cp -L "$lib" "$STAGE/lib/$(basename "$lib")"
  strip --strip-unneeded "$STAGE/lib/$(basename "$lib")"
done
say "binaries: $(cd "$STAGE" && ls bin llvm lib | grep -v ':$' | tr '\n' ' ')"
# -9e: its 64 MiB window spans the binaries, which share most of their code (0.9 MB smaller than -6).
XZ_OPT=${XZ_OPT:--9e -T2} tar -C "$STAGE" -cJf "$DEST/bin.tar.xz" bin llvm lib $( [ -d "$STAGE/lit" ] && echo lit )

# --- shared libraries as Debian packages -------------------------------------------------------------
declare -A pkgs=()
missing_here=""
for b in "$STAGE"/bin/* "$STAGE"/llvm/* "$STAGE"/lib/*; do
  [ -f "$b" ] || continue
  while read -r lib arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ "$path" == "$BUILD/"* ]] && continue   # kiln's own, in lib/ already
    if [ "$path" = "not" ]; then missing_here+=" $(basename "$b"):$lib"; continue; fi
    pkg=""
    real=$(readlink -f "$path")   # the file, not a symlink another package (llvm-19-dev) owns
    for p in "$real" "/usr$real" "${real#/usr}" "$path"; do
      pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || { say "WARNING: no Debian package owns $path ($lib): not bundled"; continue; }
    [[ "$BASE_PACKAGES" == *" $pkg "* ]] || pkgs[$pkg]=1
  done < <(ldd "$b")
done
[ -z "$missing_here" ] || die "libraries missing on this machine already:$missing_here"
mkdir -p "$DEB_CACHE"
for pkg in "${!pkgs[@]}"; do
  version=$(dpkg-query -W -f='${Version}' "$pkg")
  file=$(ls "$DEB_CACHE/${pkg}_"*.deb 2>/dev/null | grep -F "_$(echo "$version" | sed 's/:/%3a/')_" | head -1 || true)
  if [ -z "$file" ]; then
    (cd "$DEB_CACHE" && apt-get download "$pkg=$version" >/dev/null 2>&1) ||
      die "apt-get download $pkg=$version failed (run apt-get update, or put the .deb in $DEB_CACHE)"
    file=$(ls "$DEB_CACHE/${pkg}_"*.deb | grep -F "_$(echo "$version" | sed 's/:/%3a/')_" | head -1)
  fi
  cp "$file" "$DEST/debs/"
done
say "packages: $(ls "$DEST/debs" | sed 's/_.*//' | sort | tr '\n' ' ')"

# --- sources, cases, harness ---------------------------------------------------------------------
# A bundle inside the repository travels with it (the device tool carries the working tree), and
# run_on_device.sh reads the sources from there: copying them again would only eat the 64 MiB.
case "$(cd "$DEST" && pwd)/" in
  "$ROOT"/*) say "sources: read from the repository around $DEST (src/ holds the generated cases only)" ;;
  *)
    (cd "$ROOT" && git ls-files -z examples tests/lit bench/peers bench/compare.py | xargs -0 cp --parents -t "$DEST/src/")
    # Untracked-but-present files of the harness (a working copy under edit) travel too.
    (cd "$ROOT" && cp --parents -t "$DEST/src/" bench/peers/*.py bench/compare.py examples/*.kiln) ;;
esac
python3 "$ROOT/bench/peers/cases.py" --emit-kiln "$DEST/src/cases" >/dev/null
for f in "$DEST"/src/cases/*.kiln; do
  "$BUILD/tools/kiln" check "$f" || die "kiln check $f failed: the generated case does not parse"
done
ONNX_DATA=${KILN_ONNX_DATA:-/usr/share/libonnx-testdata/data}
if [ -d "$ONNX_DATA/node" ]; then
  tiers=$(cat "$ROOT"/tests/onnx/tier1.txt "$ROOT"/tests/onnx/tier2.txt | sed 's/#.*//' | awk 'NF {print "node/" $NF}' | sort -u)
  (cd "$ONNX_DATA" && XZ_OPT=${XZ_OPT:--6 -T2} tar -cJf "$DEST/onnx-data.tar.xz" $tiers simple) ||
    die "packing the ONNX node tests from $ONNX_DATA failed"
else
  say "WARNING: no ONNX test data at $ONNX_DATA (libonnx-testdata): the onnx step will run the model zoo only"
fi
cp "$ROOT/scripts/run_on_device.sh" "$DEST/run_on_device.sh"
chmod +x "$DEST/run_on_device.sh"

# --- size, manifest -----------------------------------------------------------------------------------
# Measured in bytes (apparent sizes), as the device tool measures what travels: a bundle of 59.4 MiB
# on disk plus the tracked tree's 5.5 MiB on disk (3.8 MiB in bytes) travelled on 2026-11-27.
bundle_bytes() { du -sb "$@" | awk '{s += $1} END {print s}'; }
tree_bytes=$(cd "$ROOT" && git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | awk '{print $1}')
if [ $(( $(bundle_bytes "$DEST") + tree_bytes )) -gt $(( LIMIT_MIB * 1048576 )) ] && [ -f "$DEST/onnx-data.tar.xz" ]; then
  rm "$DEST/onnx-data.tar.xz"
  say "WARNING: over the device tool's $LIMIT_MIB MiB with the ONNX node tests: left out (the onnx step runs the model zoo only)"
fi
total=$(bundle_bytes "$DEST")
{
  echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- . 2>/dev/null || echo '+dirty')"
  echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "build_dir: $BUILD"
  echo "build_type: $build_type"
  echo "source_dir: $source_dir"
  echo "packages: $(cd "$DEST/debs" && ls | tr '\n' ' ')"
  echo "binaries (unpacked sizes):"
  (cd "$STAGE" && find bin llvm -type f -printf '  %p %s\n' | sort)
  echo "files:"
  (cd "$DEST" && find . -type f -not -path './src/*' -printf '  %p %s\n' | sort)
  echo "  ./src/ $(du -sb "$DEST/src" | cut -f1)"
  echo "total_bytes: $total"
} > "$DEST/MANIFEST.txt"
mib=$(( (total + 1048575) / 1048576 ))
say "bundle $DEST: $mib MiB ($total bytes); largest:"
(cd "$DEST" && find . -type f -printf '%s %p\n' | sort -rn | awk 'NR <= 5 {printf "  %6.1f MiB %s\n", $1/1048576, $2}')
say "with the tracked tree ($(( tree_bytes / 1024 )) KiB) the device tool carries about $(( (total + tree_bytes) / 1048576 )) MiB of its $LIMIT_MIB MiB"
[ $(( total + tree_bytes )) -le $(( LIMIT_MIB * 1048576 )) ] || die "over the device tool's $LIMIT_MIB MiB: see the largest files above"
