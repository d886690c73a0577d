#!/usr/bin/env python3
"""Prints the golden .npy files of npy_test.cpp as C++ byte literals, written by real NumPy.

    pip install numpy ml_dtypes && python3 tests/unit/ir/npy_goldens.py

The test does not run this (it must not need Python); rerun it to add a case or to check the
goldens against another NumPy version, and paste the output into npy_test.cpp.
"""
import io

import ml_dtypes
import numpy as np
from numpy.lib import format as npformat

HEX = "0123456789abcdefABCDEF"


def cxx_lines(data, indent="    ", width=90):
    """C++ string literal pieces for `data`; a hex escape never runs into a following hex digit."""
    text, after_hex = "", False
    for c in data:
        ch = chr(c)
        if 32 <= c < 127 and ch not in '"\\':
            text += ('" "' if after_hex and ch in HEX else "") + ch
            after_hex = False
        elif ch in '"\\':
            text, after_hex = text + "\\" + ch, False
        else:
            text, after_hex = text + "\\x%02x" % c, True
    pieces = []
    while len(text) > width:
        cut = width
        while text[cut - 1] == "\\" or "\\x" in text[max(0, cut - 4):cut]:  # not inside an escape
            cut -= 1
        pieces.append(text[:cut])
        text = text[cut:]
    pieces.append(text)
    return [f'{indent}"{p}"' for p in pieces]


def literal(name, comment, data):
    end = data.index(b"\n")  # header, its final newline, then the data
    lines = cxx_lines(data[:end]) + ['    "\\n"'] + (cxx_lines(data[end + 1:]) if end + 1 < len(data) else [])
    print(f"// {comment}\nconstexpr char k{name}[] =\n" + "\n".join(lines) + ";")


def saved(array, version=None):
    f = io.BytesIO()
    npformat.write_array(f, array, version=version) if version else np.save(f, array)
    return f.getvalue()


CASES = {
    "F32_2x3": "np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1",
    "F32_SCALAR": "np.float32(1.5)",
    "I64_0x3": "np.zeros((0, 3), np.int64)",
    "BOOL_3": "np.array([True, False, True])",
    "I8_4": "np.array([-128, -1, 0, 127], np.int8)",
    "I32_2x2": "np.array([[1, -2], [2147483647, -2147483648]], np.int32)",
    "F16_4": "np.array([0, 1, -2, 65504], np.float16)",
    "F64_2": "np.array([1.0, -0.5])",
    "I64_SCALAR": "np.int64(-7)",
    "F32_BIGDIM_0": "np.zeros((12345678901, 0), np.float32)",
    "F64_RANK30": "np.full((1,) * 30, 2.0)",
    "I16_3": "np.array([-32768, -1, 32767], np.int16)",
    "U8_3": "np.array([0, 128, 255], np.uint8)",
    "U32_2": "np.array([1, 4294967295], np.uint32)",
    "U64_2": "np.array([1, 18446744073709551615], np.uint64)",
}
for name, expr in CASES.items():
    literal(name, f"np.save(f, {expr})", saved(np.asarray(eval(expr))))

# NumPy saves ml_dtypes.bfloat16 as '<V2'; kiln writes descr 'bfloat16', which np.load reads once
# ml_dtypes is imported. This is NumPy's header for that descr, then the bfloat16 bytes.
f = io.BytesIO()
npformat.write_array_header_1_0(f, {"descr": "bfloat16", "fortran_order": False, "shape": (3,)})
bf16 = f.getvalue() + np.array([1, -2.5, 0.1], dtype=ml_dtypes.bfloat16).tobytes()
assert np.load(io.BytesIO(bf16)).dtype == ml_dtypes.bfloat16
literal("BF16_3", "numpy.lib.format header for descr 'bfloat16' + ml_dtypes.bfloat16([1, -2.5, 0.1]).tobytes()", bf16)

for major in (2, 3):
    literal(f"I32_1x3_V{major}", f"numpy.lib.format.write_array(f, np.array([[1, 2, 3]], np.int32), version=({major}, 0))",
            saved(np.array([[1, 2, 3]], np.int32), (major, 0)))
literal("Fortran", "np.save(f, np.asfortranarray(np.arange(4, dtype=np.float32).reshape(2, 2)))",
        saved(np.asfortranarray(np.arange(4, dtype=np.float32).reshape(2, 2))))
literal("BigEndian", "np.save(f, np.array([1, 2], '>i4'))", saved(np.array([1, 2], ">i4")))
literal("Uint16", "np.save(f, np.array([1, 2], np.uint16))", saved(np.array([1, 2], np.uint16)))
literal("Structured", "np.save(f, np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]))",
        saved(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])))
literal("BF16AsVoid", "np.save(f, np.array([1, 2], dtype=ml_dtypes.bfloat16)): NumPy writes descr '<V2'",
        saved(np.array([1, 2], dtype=ml_dtypes.bfloat16)))
