"""Prints a .kiln function: an elementwise chain of N ops (tanh and neg alternating) over f32[8,8]."""
import sys

n = int(sys.argv[1])
print("func @main(%x: f32[8,8]) -> f32[8,8] {")
print("  %v0 = tanh %x")
for i in range(1, n):
    print("  %v{} = {} %v{}".format(i, "neg" if i % 2 else "tanh", i - 1))
print("  return %v{}".format(n - 1))
print("}")
