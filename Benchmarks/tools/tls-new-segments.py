#!/usr/bin/env python3
# A new TLS connection's wall time, cut into segments at the system calls that bound them, for one client
# against the benchmark nginx (`SERVE=1 Benchmarks/run.sh`). Record system-wide, so that nginx's calls are in
# the same trace, then read it:
#   perf trace -a -e 'connect,sendto,recvfrom,write,read,close,epoll_wait,futex,accept4,sendmsg,recvmsg' \
#       -o trace.txt -- CLIENT...        (bench-asynchttp --scenario tls-new …, or wrk -t1 -c1 -H "Connection: close" …)
#   Benchmarks/tools/tls-new-segments.py trace.txt
# Prints the median of each segment over the connections found. The tracer adds some 10-30 µs to every system
# call, so compare the waits (a segment that ends when a thread wakes), not whole cycles, between clients that
# make different numbers of calls.
import re
import statistics
import sys

LINE = re.compile(r"^\s*([\d.]+) \(\s*([\d.]*)\s*(?:ms)?\): (\S+?)/(\d+) (.*)$")
SEGMENTS = ["connect -> client hello sent", "hello sent -> server flight written", "flight written -> client reads it",
            "client reads flight -> Finished sent", "Finished sent -> request sent", "request sent -> response written",
            "response written -> client reads it", "response read -> next connect", "whole connection"]


def parse(path):
    events = []
    for line in open(path, errors="replace"):
        match = LINE.match(line)
        if not match:
            continue
        start, duration, comm, _, rest = match.groups()
        call = re.search(r"(\w+)\(", rest.replace("... [continued]: ", ""))
        result = re.search(r"= (-?\d+)", rest)
        if not call:
            continue
        start_us = float(start) * 1000
        events.append({"t": start_us, "end": start_us + (float(duration) * 1000 if duration else 0),
                       "server": comm.startswith("nginx"), "call": call.group(1), "continued": rest.startswith("..."),
                       "ret": int(result.group(1)) if result else 0, "peek": "PEEK" in rest})
    events.sort(key=lambda e: e["end"])
    return events


def first(events, predicate):
    return next((e for e in events if predicate(e)), None)


def main():
    events = parse(sys.argv[1])
    connects = [i for i, e in enumerate(events)
                if not e["server"] and e["call"] == "connect" and not e["continued"]]
    values = {name: [] for name in SEGMENTS}
    reads = ("recvfrom", "read", "recvmsg")
    for a, b in zip(connects, connects[1:]):
        window = events[a:b]
        sends = [e for e in window if not e["server"] and e["call"] in ("sendto", "write", "sendmsg") and e["ret"] > 0]
        if len(sends) < 3:
            continue
        hello, finished, request = sends[0], sends[1], sends[2]
        flight = first(window, lambda e: e["server"] and e["call"] == "write" and e["ret"] > 500 and e["end"] > hello["end"])
        if not flight:
            continue
        flight_read = first(window, lambda e: not e["server"] and e["call"] in reads and e["ret"] > 0 and not e["peek"]
                            and e["t"] >= flight["end"] - 5)
        response = first(window, lambda e: e["server"] and e["call"] == "write" and e["ret"] > 1000 and e["end"] > request["end"])
        if not flight_read or not response:
            continue
        response_read = first(window, lambda e: not e["server"] and e["call"] in reads and e["ret"] > 1000
                              and e["t"] >= response["end"] - 5)
        if not response_read:
            continue
        start, end = events[a]["t"], events[b]["t"]
        row = [hello["end"] - start, flight["end"] - hello["end"], flight_read["t"] - flight["end"],
               finished["end"] - flight_read["t"], request["t"] - finished["end"], response["end"] - request["t"],
               response_read["t"] - response["end"], end - response_read["t"], end - start]
        for name, value in zip(SEGMENTS, row):
            values[name].append(value)
    count = len(values[SEGMENTS[-1]])
    if count == 0:
        sys.exit("no complete connection found in the trace")
    print(f"{count} connections; median µs per segment")
    for name in SEGMENTS:
        print(f"  {name:40} {statistics.median(values[name]):7.0f}")


if __name__ == "__main__":
    main()
