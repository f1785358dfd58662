"""CPU time per request, by function, from a `perf record -g` profile: what each function and everything it calls
cost one request (inclusive), what it cost by itself (self), and, for one function, which of its callees the
time went to.

    perf record -e cpu-clock -F 10000 -g -o /tmp/send.data \
        Benchmarks/.build/release/bench-asynchttp --floor 127.0.0.1 18080 4 send
    python3 Benchmarks/tools/perf-per-request.py /tmp/send.data --requests N [--hz 10000] [--grep REGEX] [--top 60]
    python3 Benchmarks/tools/perf-per-request.py /tmp/send.data --requests N --callees '^ConnectionPool.release'

N is the request count the benchmark printed; --hz is the sampling frequency given to perf. A sample counts once
for every distinct function on its stack. Frame-pointer stacks lose the immediate caller of a leaf without frame
pointers (libc, OpenSSL), whose time then shows under the caller's caller: read small figures with care. Names
are demangled with `swift demangle --simplified`.
"""
import argparse
import collections
import re
import subprocess

parser = argparse.ArgumentParser()
parser.add_argument("data", help="perf.data")
parser.add_argument("--requests", type=int, required=True, help="requests in the profiled run")
parser.add_argument("--hz", type=int, default=10000, help="perf's sampling frequency (-F)")
parser.add_argument("--grep", help="only functions matching this regular expression")
parser.add_argument("--callees", help="split the outermost frame matching this regular expression by its callees")
parser.add_argument("--top", type=int, default=60)
arguments = parser.parse_args()

script = subprocess.run(["perf", "script", "-i", arguments.data, "-F", "ip,sym"], capture_output=True, text=True,
                        check=True).stdout
script = subprocess.run(["swift", "demangle", "--simplified"], input=script, capture_output=True, text=True,
                        check=True).stdout
per_sample_ns = 1e9 / arguments.hz / arguments.requests


def stacks():
    for sample in script.split("\n\n"):
        frames = []
        for line in sample.strip().split("\n"):
            parts = line.strip().split(None, 1)
            if parts:
                frames.append(parts[1] if len(parts) > 1 else parts[0])
        if frames:
            yield frames  # leaf first


if arguments.callees:
    pattern = re.compile(arguments.callees)
    total = 0
    callees = collections.Counter()
    for frames in stacks():
        matches = [index for index, frame in enumerate(frames) if pattern.search(frame)]
        if not matches:
            continue
        outermost = max(matches)
        total += 1
        callees["(self)" if outermost == 0 else frames[outermost - 1]] += 1
    print(f"{total * per_sample_ns:8.0f} ns per request in all")
    for name, count in callees.most_common(arguments.top):
        print(f"{count * per_sample_ns:8.0f}  {name[:150]}")
else:
    inclusive = collections.Counter()
    own = collections.Counter()
    samples = 0
    for frames in stacks():
        samples += 1
        own[frames[0]] += 1
        for frame in set(frames):
            inclusive[frame] += 1
    grep = re.compile(arguments.grep) if arguments.grep else None
    print(f"{samples * per_sample_ns:8.0f} ns per request in all")
    print(f"{'inclusive':>9} {'self':>7}  (ns per request)")
    rows = sorted(((count, name) for name, count in inclusive.items() if grep is None or grep.search(name)), reverse=True)
    for count, name in rows[:arguments.top]:
        print(f"{count * per_sample_ns:9.0f} {own[name] * per_sample_ns:7.0f}  {name[:150]}")
