"""The size of each async function's frame in a Swift binary, largest first.

Every async function has an "async function pointer" (a symbol whose mangled name ends in `Tu`): a relative
offset to the code, then the size of the context the callee allocates on the task's stack allocator when it is
called. A request in flight holds the frames of every function it is inside (send, each middleware, the
transport), so these sizes add up to the memory each concurrent request costs (`conc256`'s RSS).

    python3 Benchmarks/tools/async-frames.py Benchmarks/.build/release/bench-asynchttp [--grep Middleware] [--top 40]

Functions the optimizer inlined into their callers, and those only ever called directly inside their module,
may have no such symbol; their bytes are in a caller's frame. Needs `readelf`, `nm` and `swift demangle`.
"""
import argparse
import re
import struct
import subprocess

parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("--grep", help="only names matching this regular expression")
parser.add_argument("--top", type=int, default=60)
args = parser.parse_args()

# Loaded sections with file contents: address, file offset, size.
sections = []
for line in subprocess.run(["readelf", "-SW", args.binary], capture_output=True, text=True, check=True).stdout.splitlines():
    line = line.strip()
    if not line.startswith("[") or "]" not in line:
        continue
    fields = line[line.index("]") + 1:].split()
    if len(fields) < 5 or fields[1] == "NOBITS":
        continue
    try:
        sections.append((int(fields[2], 16), int(fields[3], 16), int(fields[4], 16)))
    except ValueError:
        pass

data = open(args.binary, "rb").read()
rows = []
for line in subprocess.run(["nm", "--defined-only", args.binary], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if len(fields) < 3 or not fields[2].endswith("Tu"):
        continue
    address = int(fields[0], 16)
    for start, offset, size in sections:
        if start <= address < start + size:
            at = offset + address - start
            _, context_size = struct.unpack("<iI", data[at:at + 8])
            rows.append((context_size, fields[2]))
            break

names = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(symbol for _, symbol in rows),
                       capture_output=True, text=True, check=True).stdout.splitlines()
shown = 0
for (size, _), name in sorted(zip(rows, names), key=lambda row: -row[0][0]):
    name = name.removeprefix("async function pointer to ")
    if args.grep and not re.search(args.grep, name):
        continue
    print(f"{size:7d}  {name}")
    shown += 1
    if shown >= args.top:
        break
