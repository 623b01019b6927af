"""The promotion FFMAs' scheduling bits in a cubin: list them, count
register-bank conflicts, or rewrite them (a measurement tool; gen build
never rewrites a cubin).

  python3 tests/sass_ffma_ctrl.py list CUBIN KERNEL [HEXADDR COUNT]
  python3 tests/sass_ffma_ctrl.py banks CUBIN[:KERNEL] ...
  python3 tests/sass_ffma_ctrl.py rewrite CUBIN OUT MODE KERNEL[,KERNEL...]

Each sm_90 instruction is 128 bits; the scheduling bits sit above bit 41 of
the upper 64: stall count (4), yield (1: ptxas writes 1 where the warp keeps
issuing, 0 where it may switch), write and read barriers (3 each), wait
mask (6), operand reuse flags (4; 2 is slot b, where the promotion reads its
scale). banks counts the FFMAs with three register sources, those of them
of which two sources that are not in the reuse cache share a bank
(register number mod 2), those with the yield bit set and those that flag
their scale for reuse. rewrite
MODE: yield1 sets the yield bit of every FFMA; yield1reuse also flags the
scale for reuse wherever the next FFMA reads the same one (what ptxas
writes in the loop without barriers of tests/promotion_forms_bench.cu).
HARDWARE.toml cites its H200 figures. Needs cuobjdump (pip
nvidia-cuda-cuobjdump, or CUOBJDUMP=path)."""
import os
import re
import shutil
import struct
import subprocess
import sys


def cuobjdump() -> str:
    found = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not found:
        import nvidia.cu13  # the pip package's binary
        found = os.path.join(list(nvidia.cu13.__path__)[0], "bin", "cuobjdump")
    return found


LINE = re.compile(r"\s+/\*([0-9a-f]{4,5})\*/\s+(.*?)\s*/\* (0x[0-9a-f]{16}) \*/")
HIGH = re.compile(r"\s+/\* (0x[0-9a-f]{16}) \*/")
FFMA = re.compile(r"^FFMA (R\d+), (R\d+)(\.reuse)?, (R\d+)(\.reuse)?, (R\d+)(\.reuse)? ;")


def instructions(path: str, kernel: str) -> list:
    out = subprocess.run([cuobjdump(), "-sass", "-fun", kernel, path], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    found = []
    for i, line in enumerate(out[:-1]):
        m, m2 = LINE.match(line), HIGH.match(out[i + 1])
        if m and m2:
            hi = int(m2.group(1), 16)
            ctrl = hi >> 41
            found.append(dict(addr=int(m.group(1), 16), text=m.group(2), hi=hi, stall=ctrl & 0xF,
                              yld=(ctrl >> 4) & 1, wait=(ctrl >> 11) & 0x3F, reuse=(ctrl >> 17) & 0xF))
    return found


def kernels(path: str) -> list:
    out = subprocess.run([cuobjdump(), "-sass", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"Function : (\S+)", out)


def bank_conflicts(ins: list) -> tuple:
    """Three-register FFMAs: how many, how many read two operands from one
    bank, how many have the yield bit set, how many flag their scale
    (slot b) for reuse."""
    total = conflicts = yields = reused = 0
    cached = set()
    for r in ins:
        m = FFMA.match(r["text"])
        if not m:
            cached = set()
            continue
        sources = [(m.group(2), m.group(3)), (m.group(4), m.group(5)), (m.group(6), m.group(7))]
        banks = [int(reg[1:]) % 2 for reg, _ in sources if reg not in cached]
        total += 1
        conflicts += len(banks) != len(set(banks))
        yields += r["yld"]
        reused += bool(m.group(5))
        cached = {reg for reg, flag in sources if flag}
    return total, conflicts, yields, reused


def text_offsets(data: bytes) -> dict:
    """ELF64 section name -> file offset."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    strtab = heads[names][4]
    name = lambda off: data[strtab + off:data.index(b"\0", strtab + off)].decode()
    return {name(h[0]): h[4] for h in heads}


def rewrite(path: str, out: str, mode: str, names: list) -> None:
    if mode not in ("yield1", "yield1reuse"):
        raise SystemExit(f"mode is yield1 or yield1reuse, not {mode!r}")
    data = bytearray(open(path, "rb").read())
    offsets = text_offsets(data)
    for kernel in names:
        base = offsets[".text." + kernel]
        ins = instructions(path, kernel)
        changed = 0
        for i, r in enumerate(ins):
            m = FFMA.match(r["text"])
            if not m:
                continue
            nxt = FFMA.match(ins[i + 1]["text"]) if i + 1 < len(ins) else None
            ctrl = new = r["hi"] >> 41
            new |= 1 << 4
            if mode == "yield1reuse" and nxt and nxt.group(4) == m.group(4):
                new |= 2 << 17
            if new != ctrl:
                struct.pack_into("<Q", data, base + r["addr"] + 8, (r["hi"] & ((1 << 41) - 1)) | (new << 41))
                changed += 1
        print(f"{kernel}: {changed} FFMAs rewritten")
    open(out, "wb").write(data)


def main(argv: list) -> None:
    if len(argv) < 2 or argv[0] not in ("list", "banks", "rewrite"):
        raise SystemExit(__doc__)
    if argv[0] == "list":
        start = int(argv[3], 16) if len(argv) > 3 else 0
        count = int(argv[4]) if len(argv) > 4 else 1 << 30
        for r in instructions(argv[1], argv[2]):
            if start <= r["addr"] < start + 16 * count:
                print(f"{r['addr']:05x} stall {r['stall']:2d} yield {r['yld']} wait {r['wait']:02x} "
                      f"reuse {r['reuse']:x}  {r['text']}")
    elif argv[0] == "banks":
        for spec in argv[1:]:
            path, _, kernel = spec.partition(":")
            for k in [kernel] if kernel else kernels(path):
                total, conflicts, yields, reused = bank_conflicts(instructions(path, k))
                if total:
                    print(f"{os.path.basename(path)}:{k}: {conflicts} of {total} three-register FFMAs "
                          f"with a bank conflict ({conflicts / total:.2f}); yield bit set on {yields}, "
                          f"scale flagged for reuse on {reused}")
    else:
        rewrite(argv[1], argv[2], argv[3], argv[4].split(","))


if __name__ == "__main__":
    main(sys.argv[1:])
