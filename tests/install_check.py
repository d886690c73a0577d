#!/usr/bin/env python3
"""Installs kiln from a build tree into a fresh prefix and builds examples/cpp/ against it, as
another project would (find_package(kiln), kiln::kiln), then runs the example and the installed
`kiln` tool. The example sees only the prefix: a public header that included an internal one, or
an LLVM header, fails to compile here."""
import argparse
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        sys.exit(f"install check: `{' '.join(cmd)}` failed with exit code {r.returncode}")
    return r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, help="kiln's build tree")
    p.add_argument("--workdir", required=True)
    p.add_argument("--version", required=True, help="the version the package must report")
    p.add_argument("--cxx-flags", default="", help="flags for the example (a sanitizer build's)")
    a = p.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    prefix = os.path.join(a.workdir, "prefix")
    example = os.path.join(a.workdir, "example")
    run(["cmake", "--install", a.build, "--prefix", prefix])
    for path in ("include/kiln/kiln.h", "include/kiln/version.h", "lib/cmake/kiln/kilnConfig.cmake", "bin/kiln"):
        if not os.path.exists(os.path.join(prefix, path)):
            sys.exit(f"install check: {path} was not installed")
    internal = [f for f in os.listdir(os.path.join(prefix, "include")) if f != "kiln"]
    if internal:
        sys.exit(f"install check: internal headers were installed: {internal}")
    run(["cmake", "-S", os.path.join(ROOT, "examples", "cpp"), "-B", example, "-G", "Ninja",
         f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_CXX_FLAGS={a.cxx_flags}", "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", example])
    out = run([os.path.join(example, "quickstart")])
    if f"kiln {a.version}:" not in out:
        sys.exit(f"install check: the example did not report kiln {a.version}")
    version = run([os.path.join(prefix, "bin", "kiln"), "--version"])
    if not version.startswith(f"kiln {a.version} "):
        sys.exit(f"install check: `kiln --version` printed {version!r}")
    print("install check: ok")


if __name__ == "__main__":
    main()
