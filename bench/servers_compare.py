#!/usr/bin/python3
"""Runs bench/servers.sh's points, interleaved in rounds, appending one JSON line per run to
$RESULTS, then renders docs/benchmarks-servers.md from every line of that file (medians over
the rounds). On Redis each run also records the server's own counts: messages published per
release, and commands per operation (a script's inner commands included), and each round
measures the server's own floor for the pattern with redis-benchmark. Environment: see
bench/servers.sh; RENDER_ONLY=1 renders without measuring."""
import json
import os
import statistics
import subprocess
import sys

import server_counters  # bench/, beside this script

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.environ.get("DLOCK_BENCH", "dlock-bench")
PG, MY = os.environ.get("PG_URL", ""), os.environ.get("MY_URL", "")
REDIS, REDIS_PORT = os.environ.get("REDIS_URL", ""), os.environ.get("REDIS_PORT", "")
REPEATS = int(os.environ.get("REPEATS", "3"))
ITERATIONS = int(os.environ.get("ITERATIONS", "2000"))
RESULTS = os.environ["RESULTS"]
PEERS = os.path.join(REPO, "bench", "peers")


def peer(script, design, url):
    """A Python peer's command: bench/peers/<script> --design DESIGN --backend URL."""
    return ["/usr/bin/python3", os.path.join(PEERS, script), "--design", design, "--backend", url]


# (server, implementation, command without the scenario's arguments)
IMPLS = [
    ("Redis", "dlock", [BENCH, "--backend", REDIS]),
    ("Redis", "dlock async_acquire", [BENCH, "--backend", REDIS, "--strategy", "dlock-async"]),
    ("Redis", "seed SET NX PX (dlock-bench)", [BENCH, "--backend", REDIS, "--strategy",
                                               "seed-redis"]),
    ("Redis", "redis-py Lock", ["/usr/bin/python3", os.path.join(PEERS, "redis-py",
                                                                 "redis_py_lock.py"),
                                "--backend", REDIS]),
    ("Redis", "node-redlock", ["node", os.path.join(PEERS, "node-redlock", "redlock_lock.mjs"),
                               "--backend", REDIS]),
    ("PostgreSQL", "dlock (advisory)", [BENCH, "--backend", PG]),
    ("PostgreSQL", "dlock (advisory) async_acquire",
     [BENCH, "--backend", PG, "--strategy", "dlock-async"]),
    ("PostgreSQL", "dlock mode=table", [BENCH, "--backend", PG + "?mode=table"]),
    ("PostgreSQL", "dlock mode=row", [BENCH, "--backend", PG + "?mode=row"]),
    ("PostgreSQL", "seed table (dlock-bench)", [BENCH, "--backend", PG, "--strategy", "pg-table"]),
    ("PostgreSQL", "seed FOR UPDATE (dlock-bench)",
     [BENCH, "--backend", PG, "--strategy", "pg-row"]),
    ("PostgreSQL", "psycopg pg_advisory_lock", peer("psycopg/psycopg_locks.py", "advisory", PG)),
    ("PostgreSQL", "psycopg seed table", peer("psycopg/psycopg_locks.py", "table", PG)),
    ("MariaDB", "dlock (GET_LOCK)", [BENCH, "--backend", MY]),
    ("MariaDB", "dlock (GET_LOCK) async_acquire",
     [BENCH, "--backend", MY, "--strategy", "dlock-async"]),
    ("MariaDB", "dlock mode=table", [BENCH, "--backend", MY + "?mode=table"]),
    ("MariaDB", "dlock mode=row", [BENCH, "--backend", MY + "?mode=row"]),
    ("MariaDB", "PyMySQL GET_LOCK", peer("pymysql/pymysql_locks.py", "get_lock", MY)),
    ("MariaDB", "PyMySQL seed table", peer("pymysql/pymysql_locks.py", "table", MY)),
]
POINTS = [("uncontended", 1), ("contended", 8), ("contended", 32)]
# The server's floor for the seed's pattern: redis-benchmark's rate of SET NX PX and of DEL on
# as many connections as the point has clients, one command in flight on each (no pipelining),
# random keys; a cycle is one of each. It is what Redis itself does with no lock logic at all,
# and with 8 or 32 connections no contention either: a ceiling, not a peer.
FLOOR = ("Redis", "server floor: SET NX PX + DEL (redis-benchmark)")
FLOOR_COMMANDS = [["SET", "dlock-floor:__rand_int__", "v", "NX", "PX", "30000"],
                  ["DEL", "dlock-floor:__rand_int__"]]


def redis_counts():
    """The Redis server's (PUBLISH calls, commands processed) so far."""
    values = server_counters.redis_info(REDIS_PORT)
    return values.get("cmdstat_publish", 0), values.get("total_commands_processed", 0)


def redis_floor(clients):
    """Cycles per second of FLOOR_COMMANDS on `clients` connections."""
    seconds_per_cycle = 0.0
    for command in FLOOR_COMMANDS:
        run = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", REDIS_PORT,
                              "-n", str(max(ITERATIONS, 10000)), "-c", str(clients),
                              "-r", "1000000", "--csv"] + command,
                             capture_output=True, text=True, timeout=300, check=True)
        row = run.stdout.strip().splitlines()[-1].split(",")
        seconds_per_cycle += 1.0 / float(row[1].strip('"'))
    return 1.0 / seconds_per_cycle


def measure():
    with open(RESULTS, "a") as out:
        for round_ in range(REPEATS):
            for scenario, clients in POINTS:
                try:
                    out.write(json.dumps({"database": FLOOR[0], "impl": FLOOR[1],
                                          "scenario": scenario, "clients": clients,
                                          "round": round_,
                                          "ops_per_s": redis_floor(clients)}) + "\n")
                except (subprocess.SubprocessError, IndexError, ValueError) as e:
                    print("Redis floor %s/%d failed: %s" % (scenario, clients, e), file=sys.stderr)
                for database, impl, command in IMPLS:
                    argv = command + ["--scenario", scenario, "--clients", str(clients),
                                      "--iterations", str(ITERATIONS)]
                    try:
                        before = redis_counts() if database == "Redis" else None
                        run = subprocess.run(argv, capture_output=True, text=True, timeout=300)
                        line = json.loads(run.stdout.strip().splitlines()[-1])
                        # A run that failed, or saw two holders at once, is not a figure.
                        if run.returncode != 0 or line.get("violations", 0) > 0:
                            raise ValueError("exit %d, %s violations, %s" % (
                                run.returncode, line.get("violations", 0), run.stderr[-300:]))
                    except (subprocess.TimeoutExpired, IndexError, ValueError) as e:
                        print("%s %s %s/%d failed: %s" % (database, impl, scenario, clients, e),
                              file=sys.stderr)
                        continue
                    line.update({"database": database, "impl": impl, "round": round_,
                                 "clients": clients})
                    if before:
                        # The server counts the warm-up's operations too.
                        ops = line["iterations"] + line.get("warmup", 0)
                        after = redis_counts()
                        line["messages_per_release"] = (after[0] - before[0]) / ops
                        line["server_commands_per_op"] = (after[1] - before[1]) / ops
                    out.write(json.dumps(line) + "\n")
                    out.flush()
                    print("round %d %s %s %s/%d: %.0f ops/s" % (
                        round_, database, impl, scenario, clients, line["ops_per_s"]),
                        file=sys.stderr)


def median(lines, key):
    values = [line[key] for line in lines if key in line]
    return statistics.median(values) if values else None


def cell(value, fmt="{:,.0f}"):
    return "–" if value is None else fmt.format(value)


# Per server: (heading, the column's line key, format) beyond the columns every server has.
EXTRA = {"Redis": [("8: messages per release", "messages_per_release", "{:.2f}"),
                   ("8: server commands per op", "server_commands_per_op", "{:.1f}")]}


def render():
    lines = [json.loads(text) for text in open(RESULTS)]
    by = {}
    for line in lines:
        by.setdefault((line["database"], line["impl"], line["scenario"], line["clients"]),
                      []).append(line)
    page = ["# dlock beside the locks users write by hand",
            "",
            "Generated by `bench/servers.sh` from `%s` (library at %s, a %s build): a throwaway "
            "Redis 7.0, PostgreSQL 15 and MariaDB 10.11 on 127.0.0.1, %d interleaved rounds of "
            "%d operations per point, medians. The Python peers (`bench/peers/redis-py`, "
            "`bench/peers/psycopg`, `bench/peers/pymysql`) run one process per client; "
            "node-redlock (`bench/peers/node-redlock`) a worker thread per client; their CPU "
            "includes starting the runtime and connecting. The seed's strategies run inside "
            "dlock-bench. dlock runs both ways its API offers: a thread per client blocked in "
            "`lock()`, and (the `async_acquire` rows) each client a chain of `async_acquire` "
            "callbacks on the library's thread, with no thread hop between the library and "
            "the caller. Hand-off is the contract's: from one release() call to the next "
            "acquire()'s return, whoever holds next, so a client that takes the lock back at "
            "once makes it short; per-client min/max shows who held. A polling lock retries "
            "after its library's own sleep: redis-py 100 ms, node-redlock 200-400 ms, the "
            "seed's Redis lock 100 ms, the seed's table lock 10 ms. The databases run with the "
            "test scripts' speed settings (PostgreSQL `fsync=off`, `synchronous_commit=off`; "
            "MariaDB `innodb_flush_log_at_trx_commit=0`), so writes cost no disk flush. "
            "Hand-written analysis: [redis.md](redis.md#measuring-it), "
            "[postgres.md](postgres.md#measuring-it), [mysql.md](mysql.md#measuring-it)."
            % (os.path.relpath(RESULTS, REPO), os.environ.get("DLOCK_GIT_REV", "?"),
               os.environ.get("DLOCK_BUILD_TYPE", "?"), REPEATS, ITERATIONS), ""]
    for database in ["Redis", "PostgreSQL", "MariaDB"]:
        extra = EXTRA.get(database, [])
        page += ["## " + database, "",
                 "| implementation | uncontended ops/s | contended 8 ops/s | 8: hand-off p50 µs"
                 " | 8: per-client min/max | 8: client CPU µs/op | contended 32 ops/s"
                 " | 32: hand-off p50 µs | 32: per-client min/max |"
                 + "".join(" %s |" % heading for heading, _, _ in extra),
                 "|---|---|---|---|---|---|---|---|---|" + "---|" * len(extra)]
        for db, impl, _ in IMPLS + [FLOOR + (None,)]:
            if db != database:
                continue
            u = by.get((db, impl, "uncontended", 1), [])
            c8 = by.get((db, impl, "contended", 8), [])
            c32 = by.get((db, impl, "contended", 32), [])
            page.append("| %s | %s | %s | %s | %s/%s | %s | %s | %s | %s/%s |" % (
                impl, cell(median(u, "ops_per_s")), cell(median(c8, "ops_per_s")),
                cell(median(c8, "handoff_p50_us")), cell(median(c8, "per_client_min")),
                cell(median(c8, "per_client_max")), cell(median(c8, "cpu_us_per_op")),
                cell(median(c32, "ops_per_s")), cell(median(c32, "handoff_p50_us")),
                cell(median(c32, "per_client_min")), cell(median(c32, "per_client_max")))
                + "".join(" %s |" % cell(median(c8, key), fmt) for _, key, fmt in extra))
        page.append("")
    with open(os.path.join(REPO, "docs", "benchmarks-servers.md"), "w") as out:
        out.write("\n".join(page))


if __name__ == "__main__":
    if os.environ.get("RENDER_ONLY") != "1":
        measure()
    render()
