#!/usr/bin/env python3
"""Resident memory by mapping, from /proc/PID/smaps files written at the end of benchmark runs.

The benchmark clients copy /proc/self/smaps to the path in BENCH_SMAPS just before they shut down (the moment
their anonymous RSS is sampled for docs/benchmarks.md). This sums `Rss` per file (shared libraries, the
binary) and for the anonymous kinds (heap, stacks, other anonymous mappings), and prints one column per file
given, largest rows first, in MiB:

    BENCH_SMAPS=/tmp/ours.smaps bench-asynchttp --scenario seq ...
    BENCH_SMAPS=/tmp/ahc.smaps bench-ahc --scenario seq ...
    Benchmarks/tools/rss-by-mapping.py /tmp/ours.smaps /tmp/ahc.smaps

Rows under 0.1 MiB in every column are summed into "other". `Private_Dirty` of the files' mappings (their
relocated data and GOT, written at load time) is shown in a second table, since it is the part of a shared
library's pages that cannot be shared with another process. A binary written moments before (a fresh build)
counts as dirty in full until the kernel writes its pages back, so read the binary's row there with care.
"""
import os
import re
import sys

HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$")


def parse(path):
    rss, dirty = {}, {}
    name = None
    with open(path) as smaps:
        for line in smaps:
            match = HEADER.match(line)
            if match:
                target = match.group(1).strip()
                if target.startswith("/"):
                    name = os.path.basename(target)
                elif target in ("[heap]", "[stack]"):
                    name = target
                elif target == "":
                    name = "[anonymous]"
                else:
                    name = target  # [vdso], [vvar], ...
                continue
            if line.startswith("Rss:"):
                rss[name] = rss.get(name, 0) + int(line.split()[1])
            elif line.startswith("Private_Dirty:"):
                dirty[name] = dirty.get(name, 0) + int(line.split()[1])
    return rss, dirty


def table(title, columns, labels):
    names = sorted({name for column in columns for name in column},
                   key=lambda name: -max(column.get(name, 0) for column in columns))
    print(f"{title:<32}" + "".join(f"{label[:14]:>15}" for label in labels))
    other = [0] * len(columns)
    for name in names:
        values = [column.get(name, 0) for column in columns]
        if max(values) < 102:
            other = [a + b for a, b in zip(other, values)]
            continue
        print(f"{name[:32]:<32}" + "".join(f"{value / 1024:15.2f}" for value in values))
    print(f"{'other':<32}" + "".join(f"{value / 1024:15.2f}" for value in other))
    print(f"{'total':<32}" + "".join(f"{sum(column.values()) / 1024:15.2f}" for column in columns))


def main():
    paths = sys.argv[1:]
    if not paths:
        sys.exit(__doc__)
    parsed = [parse(path) for path in paths]
    labels = [os.path.basename(path).removesuffix(".smaps") for path in paths]
    table("Rss (MiB)", [rss for rss, _ in parsed], labels)
    print()
    table("Private_Dirty (MiB)", [dirty for _, dirty in parsed], labels)


if __name__ == "__main__":
    main()
