#!/usr/bin/env python3
"""Cold start: a fresh process fetching one small URL, process start to exit, for several clients in turn.

    cold-start.py RUNS SCENARIO NAME 'COMMAND ...' [NAME 'COMMAND ...' ...]

Each command runs RUNS times (after one untimed run each, so that every binary and library is in the page
cache), the clients alternating and their order swapped every round (A B, B A, A B, ...), so that neither
always runs right after the other. A run is timed from just before posix_spawn to waitpid's return
(time.perf_counter_ns); the child's stdout goes to /dev/null and its stderr is passed on. Prints one JSON line
per client, as the Swift benchmark clients do: median and p90 wall time in ms, fetches per second at the
median and the median CPU time of the child (user + system, from wait4's rusage). No peak RSS: posix_spawn
shares the parent's memory until exec (vfork), and Linux carries that high-water mark into the child's
ru_maxrss, so a 1 MiB `true` would report this Python's 14 MiB.
A run that exits with a status other than 0 counts as an error and is left out of the figures.
"""
import json
import os
import shlex
import statistics
import sys
import time


def spawn(argv, devnull):
    """Runs argv to completion; returns (wall ns, exit status, rusage)."""
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 1)]
    start = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter_ns() - start
    return elapsed, os.waitstatus_to_exitcode(status), usage


def main():
    if len(sys.argv) < 5 or len(sys.argv) % 2 != 1:
        sys.exit(__doc__)
    runs, scenario = int(sys.argv[1]), sys.argv[2]
    clients = [(sys.argv[i], shlex.split(sys.argv[i + 1])) for i in range(3, len(sys.argv), 2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    walls = {name: [] for name, _ in clients}
    cpus = {name: [] for name, _ in clients}
    errors = {name: 0 for name, _ in clients}
    first_error = {}
    for name, argv in clients:      # untimed: page cache, dynamic loader caches
        spawn(argv, devnull)
    for round_index in range(runs):
        order = clients if round_index % 2 == 0 else list(reversed(clients))
        for name, argv in order:
            elapsed, code, usage = spawn(argv, devnull)
            if code != 0:
                errors[name] += 1
                first_error.setdefault(name, f"exit status {code}")
                continue
            walls[name].append(elapsed / 1e6)
            cpus[name].append((usage.ru_utime + usage.ru_stime) * 1000)
    for name, _ in clients:
        found = walls[name]
        if not found:
            print(json.dumps({"client": name, "scenario": scenario, "failed": True}))
            continue
        median = statistics.median(found)
        p90 = statistics.quantiles(found, n=10)[8] if len(found) >= 2 else found[0]
        line = {"client": name, "scenario": scenario, "requests": len(found), "seconds": round(sum(found) / 1000, 4),
                "req_per_s": round(1000 / median, 1), "median_ms": round(median, 3), "p90_ms": round(p90, 3),
                "min_ms": round(min(found), 3), "cpu_ms": round(statistics.median(cpus[name]), 3),
                "errors": errors[name]}
        if name in first_error:
            print(f"{name} {scenario}: {errors[name]} error(s), first: {first_error[name]}", file=sys.stderr)
        print(json.dumps(line))


if __name__ == "__main__":
    main()
