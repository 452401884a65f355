#!/usr/bin/env python3
"""Runs every benchmark point on one ZooKeeper, interleaved, and writes JSON lines.

Called by bench/compare.sh, which installs, builds and starts the server. Each line of the
output is one process's JSON object (contract §4) plus the harness fields of §5: point, rep,
wall_s and the srv_* counters from `mntr` read right before and right after the process.
Standard library only.
"""
import json
import math
import os
import subprocess
import sys
import time

import report  # bench/, beside this script
import server_counters

ENV = os.environ
ZK = ENV["ZK"]
ZK_PORT = int(ZK.rsplit(":", 1)[1])
ZK_PID = ENV.get("ZK_PID")
REPEATS = int(ENV.get("REPEATS", 3))
TARGET_S = float(ENV.get("TARGET_S", 6))
QUICK = ENV.get("QUICK") == "1"
RUN_TIMEOUT = int(ENV.get("RUN_TIMEOUT", 300))
HERD_K = int(ENV.get("HERD_K", 1000))
OUT = ENV["RESULTS"]
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_BIN = ENV["DLOCK_BENCH_DIR"]


def peer(name):
    return [os.path.join(HERE, "peers", name, "run")]


IMPLS = {
    "dlock": [os.path.join(BENCH_BIN, "dlock-bench")],
    # The same library, each client a chain of async_acquire callbacks instead of a thread in lock().
    "dlock-async": [os.path.join(BENCH_BIN, "dlock-bench"), "--strategy", "dlock-async"],
    "curator": peer("curator"),
    "kazoo": peer("kazoo"),
    "go-zookeeper": peer("go-zookeeper"),
    "naive": peer("naive"),
    "seed-parent-rw": [os.path.join(BENCH_BIN, "dlock-bench"), "--strategy", "parent-rw",
                       "--impl", "seed-parent-rw"],
    "raw-c": peer("raw-c"),
}
LOCK_PEERS = ["dlock", "curator", "kazoo", "go-zookeeper"]
# dlock's last build on the ZooKeeper C client (compare.sh builds it), where issue 13 compares.
if ENV.get("DLOCK_C_CLIENT_BENCH"):
    IMPLS["dlock-c-client"] = [ENV["DLOCK_C_CLIENT_BENCH"], "--impl", "dlock-c-client"]
    C_CLIENT = ["dlock-c-client"]
else:
    C_CLIENT = []

# (label, scenario, clients, locks, impls). raw-c's rows name their §7 scenario after a colon.
POINTS = [("uncontended", "uncontended", 1, None,
           LOCK_PEERS + ["dlock-async"] + C_CLIENT + ["naive", "raw-c", "raw-c:uncontended-1rtt"])]
POINTS += [("contended-%d" % n, "contended", n, None, LOCK_PEERS + ["dlock-async"] + C_CLIENT + ["naive"])
           for n in (1, 2, 8, 32)]
POINTS += [("many-locks-%d" % m, "many-locks", 1, m,
            LOCK_PEERS + C_CLIENT + ["raw-c", "raw-c:pipelined-cgd"]) for m in (100, 1000)]
POINTS += [("rw-%d" % n, "rw", n, None, ["dlock", "curator", "kazoo", "seed-parent-rw"])
           for n in (8, 32)]
# kazoo 2.8's rw lock deadlocks (python-zk/kazoo#650); a stall costs 60 s, so try it once.
ONCE = {("rw-8", "kazoo"), ("rw-32", "kazoo")}
# The herd table: notifications per release with 1, 10 and 50 waiters.
HERD = [("herd-%s-%d" % (s, n), s, n, None, impls)
        for s, impls in (("contended", ["dlock", "naive"]), ("rw", ["dlock", "seed-parent-rw"]))
        for n in (2, 11, 51)]

MNTR_KEYS = (["zk_packets_received"] + server_counters.ZK_WATCH_KEYS
             + ["zk_cnt_fsynctime", "zk_sum_fsynctime"])


def mntr():
    return server_counters.mntr(ZK_PORT)


def server_cpu_ticks():
    if not ZK_PID:
        return None
    fields = open("/proc/%s/stat" % ZK_PID).read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def run_one(impl, scenario, clients, locks, k):
    """Runs one process; returns its JSON object with the harness fields, or an error object."""
    name, _, raw_scenario = impl.partition(":")
    cmd = IMPLS[name] + ["--zk", ZK, "--scenario", raw_scenario or scenario,
                         "--clients", str(clients), "--iterations", str(k)]
    if locks:
        cmd += ["--locks", str(locks)]
    before, cpu_before, t0 = mntr(), server_cpu_ticks(), time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                           env=dict(ENV, DLOCK_BENCH_DIR=BENCH_BIN))
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"error": "no JSON; stderr: " + p.stderr[-300:]}
        rc = p.returncode
    except subprocess.TimeoutExpired:
        result, rc = {"error": "timeout after %d s" % RUN_TIMEOUT}, -1
    wall = time.monotonic() - t0
    after, cpu_after = mntr(), server_cpu_ticks()
    result.update(impl=impl, rc=rc, wall_s=round(wall, 3))
    if rc == 0:
        ops = result["iterations"] + result.get("warmup", 0)
        d = {key: after.get(key, 0) - before.get(key, 0) for key in MNTR_KEYS}
        result["srv_pkts_per_op"] = d["zk_packets_received"] / ops
        result["srv_watch_events_per_op"] = sum(d[k] for k in MNTR_KEYS[1:5]) / ops
        result["srv_fsyncs_per_op"] = d["zk_cnt_fsynctime"] / ops
        if d["zk_cnt_fsynctime"]:
            result["srv_fsync_avg_ms"] = d["zk_sum_fsynctime"] / d["zk_cnt_fsynctime"]
        if cpu_before is not None:
            hz = os.sysconf("SC_CLK_TCK")
            result["srv_cpu_us_per_op"] = (cpu_after - cpu_before) / hz * 1e6 / ops
    elif rc != 3:
        print("  %s %s: FAILED (%s)" % (impl, scenario, result.get("error", rc)), file=sys.stderr)
    return result


def pilot_k(impl, scenario, clients, locks):
    """K for about TARGET_S seconds of measured phase, from a short pilot run."""
    base = 2 * locks if locks else 500
    if QUICK:
        return base
    r = run_one(impl, scenario, clients, locks, base)
    if r.get("rc") != 0:
        return None if r.get("rc") == 3 else base
    k = int(r["ops_per_s"] * TARGET_S)
    if locks:
        k = max(1, round(k / locks)) * locks
    return max(base, min(k, 200_000))


def record(out, result, label, rep):
    result.update(point=label, rep=rep)
    out.write(json.dumps(result, separators=(",", ":")) + "\n")
    out.flush()


def warm_server():
    """A fresh server runs interpreted at first; warm its JIT so the first pilots are not slow."""
    for scenario in ("uncontended", "pipelined-cgd"):
        run_one("raw-c", scenario, 1, None, 2000 if QUICK else 20000)


def meta(kind):
    """What was measured and how, recorded in the results so the page never guesses later."""
    return {"point": "meta", "kind": kind, "git_rev": ENV.get("DLOCK_GIT_REV"),
            "tree_files": ENV.get("DLOCK_TREE_FILES"), "tree_diff": ENV.get("DLOCK_TREE_DIFF"),
            "command": ENV.get("COMMAND_LINE", "bench/compare.sh"), "repeats": REPEATS,
            "target_s": TARGET_S, "quick": QUICK, "herd_k": HERD_K,
            "c_client_rev": ENV.get("C_CLIENT_REV") if C_CLIENT else None,
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "environment": report.environment()}


def main():
    if ENV.get("ONLY") == "extras":  # memory and start-up only, appended to RESULTS
        with open(OUT, "a") as out:
            out.write(json.dumps(meta("extras")) + "\n")
            extras(out)
        return
    started = time.monotonic()
    with open(OUT, "a") as out:
        out.write(json.dumps(meta("full")) + "\n")
    warm_server()
    with open(OUT, "a") as out:
        ks = {}
        for label, scenario, clients, locks, impls in POINTS:
            for impl in impls:
                ks[label, impl] = pilot_k(impl, scenario, clients, locks)
                print("pilot %-16s %-24s K=%s" % (label, impl, ks[label, impl]), file=sys.stderr)
        skip = {key for key, k in ks.items() if k is None}  # unsupported
        for rep in range(1, REPEATS + 1):
            for label, scenario, clients, locks, impls in POINTS:
                for impl in impls:  # A B C A B C ...: every point once per round
                    if (label, impl) in skip:
                        continue
                    r = run_one(impl, scenario, clients, locks, ks[label, impl])
                    record(out, r, label, rep)
                    print("round %d %-16s %-24s %s ops/s" % (rep, label, impl, r.get("ops_per_s", r.get("error", "-"))),
                          file=sys.stderr)
                    if r["rc"] != 0 or (label, impl) in ONCE:
                        skip.add((label, impl))
        for label, scenario, clients, locks, impls in HERD:
            for impl in impls:
                r = run_one(impl, scenario, clients, locks, 100 if QUICK else HERD_K)
                record(out, r, label, 1)
                print("herd %-16s %-16s %.2f notifications/op" % (label, impl, r.get("srv_watch_events_per_op", -1)),
                      file=sys.stderr)
        extras(out)
        out.write(json.dumps({"point": "meta-end", "seconds": round(time.monotonic() - started)}) + "\n")
    print("points took %.0f s" % (time.monotonic() - started), file=sys.stderr)


def extras(out):
    """Memory per held lock, and dlock run's start-up if the CLI exists."""
    n = "1000" if QUICK else "10000"
    for label, cmd in (("memory-dlock", [os.path.join(BENCH_BIN, "dlock-bench-memory"), "--zk", ZK, "--locks", n]),
                       ("memory-curator", peer("curator") + ["--zk", ZK, "--scenario", "memory",
                                                             "--iterations", "1", "--locks", n])):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=dict(ENV))
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        r = json.loads(lines[-1]) if lines else {"error": p.stderr[-300:]}
        r.setdefault("impl", label.split("-")[1])
        record(out, r, label, 1)
    cli = ENV.get("DLOCK_CLI", "")
    if not (cli and os.access(cli, os.X_OK)):
        record(out, {"impl": "dlock", "pending": True}, "startup", 1)
        return
    template = ENV.get("DLOCK_RUN_ARGS", "--backend zk://{zk} run -n /bench/dlock/startup -- {cmd}")
    def argv(cmd):
        return [cli] + template.format(zk=ZK, cmd=cmd).split()
    times, failures = [], []
    for _ in range(int(ENV.get("STARTUP_RUNS", 50))):
        t0 = time.monotonic()
        p = subprocess.run(argv("true"), capture_output=True, text=True, timeout=60)
        if p.returncode == 0:
            times.append((time.monotonic() - t0) * 1000)
        else:  # kept and reported: a failed start is a finding, not noise
            failures.append("rc %d: %s" % (p.returncode, p.stderr.strip()[-200:]))
    if not times:
        record(out, {"impl": "dlock", "error": "; ".join(failures[:3]), "command": " ".join(argv("true"))},
               "startup", 1)
        return
    times.sort()
    # Resident memory of the CLI while it holds the lock and its child sleeps.
    p = subprocess.Popen(argv("sleep 1.5"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    rss = next((int(l.split()[1]) for l in open("/proc/%d/status" % p.pid) if l.startswith("VmRSS:")), -1)
    p.wait(timeout=30)
    record(out, {"impl": "dlock", "runs": len(times), "failed_runs": len(failures),
                 "failures": failures[:3], "median_ms": times[len(times) // 2],
                 "min_ms": times[0], "max_ms": times[-1], "rss_holding_one_kib": rss,
                 "command": " ".join(argv("true"))}, "startup", 1)


if __name__ == "__main__":
    main()
