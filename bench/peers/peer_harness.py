"""What the Python peers share: the command line, one process per client (the GIL would
serialise threads), tickets taken from a counter shared by the processes before each
acquisition (as dlock-bench's client threads take theirs), and the JSON line dlock-bench prints.

A peer gives `run()` its name and its designs: for each, a function that, inside a client
process, connects and returns the client's (acquire, release) pair for a lock name. A peer of
more than one design takes --design.
"""
import argparse
import json
import math
import multiprocessing
import os
import resource
import sys
import time


# The seed article's table lock retries a failed INSERT; it names no interval.
SEED_RETRY_S = 0.010


def seed_table_lock(execute, busy, name):
    """The seed article's lock table over a DB-API `execute`: INSERT the name, whose primary or
    unique key makes a second INSERT fail; when `busy(error)` says the failure means the lock is
    taken, sleep and try again; release = DELETE. Returns (acquire, release)."""
    def acquire():
        while True:
            try:
                execute("INSERT INTO seed_lock (name, owner) VALUES (%s, %s)", (name, os.getpid()))
                return
            except Exception as error:  # noqa: BLE001 (busy() decides)
                if not busy(error):
                    raise
                time.sleep(SEED_RETRY_S)

    def release():
        execute("DELETE FROM seed_lock WHERE name = %s", (name,))

    return acquire, release


def _client(make_lock, backend, name, tickets, iterations, ready, start, results):
    try:
        acquire, release = make_lock(backend, name)
        ready.put(None)
        start.wait()
        # (acquire returned, release called) per operation, on the clock every process shares.
        ops = []
        while True:
            with tickets.get_lock():
                ticket = tickets.value
                tickets.value += 1
            if ticket >= iterations:
                break
            acquire()
            acquired = time.monotonic_ns()
            released = time.monotonic_ns()
            release()
            ops.append((acquired, released))
        results.put(ops)
    except Exception as error:  # noqa: BLE001 (reported by the parent)
        ready.put(repr(error))
        results.put(repr(error))


def handoff_percentiles(outcomes):
    """The contract's hand-off: all acquisitions sorted by when acquire() returned, each one's
    return minus the previous one's release() call; its median and 99th percentile in µs."""
    ops = sorted(op for client in outcomes for op in client)
    gaps = sorted(ops[i][0] - ops[i - 1][1] for i in range(1, len(ops)))
    if not gaps:
        return {}

    def at(percent):  # nearest rank, as dlock-bench
        return round(gaps[max(1, math.ceil(percent / 100 * len(gaps))) - 1] / 1000, 1)
    return {"handoff_p50_us": at(50), "handoff_p99_us": at(99)}


def run(peer, designs):
    parser = argparse.ArgumentParser()
    if len(designs) > 1:
        parser.add_argument("--design", required=True, choices=sorted(designs))
    parser.add_argument("--backend", required=True)
    parser.add_argument("--scenario", required=True, choices=["uncontended", "contended"])
    parser.add_argument("--iterations", type=int, required=True)
    parser.add_argument("--clients", type=int, default=1)
    args = parser.parse_args()
    if args.iterations < 1 or args.clients < 1:
        parser.error("--iterations and --clients must be at least 1")
    design = getattr(args, "design", next(iter(designs)))
    make_lock = designs[design]
    impl = peer if len(designs) == 1 else peer + "-" + design
    clients = 1 if args.scenario == "uncontended" else args.clients
    name = "/bench/%s/%s-%d" % (impl, args.scenario, os.getpid())
    tickets = multiprocessing.Value("l", 0)
    ready, start, results = multiprocessing.Queue(), multiprocessing.Event(), multiprocessing.Queue()
    workers = [multiprocessing.Process(target=_client, args=(
        make_lock, args.backend, name, tickets, args.iterations, ready, start, results))
        for _ in range(clients)]
    for worker in workers:
        worker.start()
    # Every client connected; a client that failed ends the run with its error.
    failures = [f for f in (ready.get(timeout=60) for _ in workers) if f is not None]
    began = time.monotonic()
    start.set()
    outcomes = [results.get(timeout=600) for _ in workers]
    failures += [o for o in outcomes if isinstance(o, str)]
    if failures:
        for worker in workers:
            worker.kill()
        sys.exit("%s: a client failed: %s" % (peer, failures[0]))
    elapsed = time.monotonic() - began
    for worker in workers:
        worker.join()
    counts = [len(ops) for ops in outcomes]
    # The clients' CPU, connecting included: a slight overestimate per operation.
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"impl": impl, "scenario": args.scenario, "clients": clients,
                      "iterations": args.iterations, "elapsed_s": round(elapsed, 6),
                      "ops_per_s": round(args.iterations / elapsed, 2),
                      "per_client_min": min(counts), "per_client_max": max(counts),
                      **handoff_percentiles(outcomes),
                      "cpu_us_per_op": round((used.ru_utime + used.ru_stime) * 1e6
                                             / args.iterations, 1)}))
