#!/usr/bin/env python3
"""What observing progress costs: bench-asynchttp with and without `--progress`, in many alternating pairs.

    progress-overhead.py [--pairs N] [--seconds S] [--downloads D] [--http-port P] [--scenarios conc,download]

Runs against the nginx of `SERVE=1 Benchmarks/run.sh` (HTTP port 18080 unless told). For each scenario, N pairs
of runs, the order inside a pair alternating (plain first, then progress first, ...), so a drift of the machine's
speed weighs on both sides alike. Each run reports its throughput and its CPU time (`cpu_s`, user + system of
the whole client process); CPU per request (conc) or per MB (download) is the steadier of the two on a shared
machine. Prints one JSON line per pair (both runs and the two costs), then per scenario and metric: the median of the per-pair costs
(progress / plain - 1, in %) and a 90 % bootstrap interval of that median (2,000 resamples, fixed seed).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", ".bench")


def run(binary, scenario, port, seconds, downloads, progress):
    argv = [binary, "--scenario", scenario, "--url", f"http://127.0.0.1:{port}", "--cacert",
            os.path.join(BENCH, "cert.pem")]
    if scenario == "conc":
        argv += ["--concurrency", "32", "--seconds", str(seconds), "--requests", "2000000"]
    else:
        argv += ["--concurrency", "1", "--requests", str(downloads)]
    if progress:
        argv.append("--progress")
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300).stdout.strip().splitlines()
    result = json.loads(out[-1])
    if result.get("errors"):
        sys.exit(f"{scenario}: {result['errors']} failed requests")
    return result


def figures(result, scenario):
    """(throughput, CPU cost per unit of work)."""
    if scenario == "conc":
        return result["req_per_s"], result["cpu_s"] / result["requests"] * 1e6  # µs per request
    return result["mb_per_s"], result["cpu_s"] / (result["bytes"] / 1e6) * 1e3  # ms per MB


def bootstrap_median(values, rounds=2000, seed=1):
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(rounds))
    return medians[int(rounds * 0.05)], medians[int(rounds * 0.95)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--downloads", type=int, default=2, help="256 MiB downloads per download run")
    parser.add_argument("--http-port", type=int, default=18080)
    parser.add_argument("--scenarios", default="conc,download")
    parser.add_argument("--binary", default=None)
    args = parser.parse_args()
    binary = args.binary or os.path.join(
        subprocess.run(["swift", "build", "-c", "release", "--package-path", os.path.join(HERE, ".."),
                        "--show-bin-path"], capture_output=True, text=True, check=True).stdout.strip(),
        "bench-asynchttp")
    summary = []
    for scenario in args.scenarios.split(","):
        costs = {"throughput": [], "cpu": []}
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            results = {}
            for progress in order:
                if scenario == "download":
                    with open(os.path.join(BENCH, "www", "256m.bin"), "rb") as warm:
                        while warm.read(1 << 24):
                            pass
                results[progress] = run(binary, scenario, args.http_port, args.seconds, args.downloads, progress)
            (plain_rate, plain_cpu), (watched_rate, watched_cpu) = figures(results[False], scenario), figures(results[True], scenario)
            costs["throughput"].append((1 - watched_rate / plain_rate) * 100)  # slower = positive, as run.sh
            costs["cpu"].append((watched_cpu / plain_cpu - 1) * 100)           # more CPU = positive
            # One line per pair (run.sh keeps these in its results and takes the median over every round's pairs).
            print(json.dumps({"client": "progress-pair", "scenario": scenario, "pair": pair,
                              "throughput_cost_pct": round(costs["throughput"][-1], 3), "cpu_cost_pct": round(costs["cpu"][-1], 3),
                              "plain": results[False], "progress": results[True]}), flush=True)
        for metric, values in costs.items():
            low, high = bootstrap_median(values)
            summary.append({"summary": True, "scenario": scenario, "metric": metric, "pairs": len(values),
                            "median_cost_pct": round(statistics.median(values), 2),
                            "interval90_pct": [round(low, 2), round(high, 2)],
                            "min_pct": round(min(values), 2), "max_pct": round(max(values), 2)})
    for line in summary:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
