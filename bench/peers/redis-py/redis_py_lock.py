#!/usr/bin/python3
"""redis-py's Lock (Debian's python3-redis) under the scenarios dlock-bench runs on Redis.

  redis_py_lock.py --backend redis://HOST:PORT --scenario uncontended|contended
                   --iterations K [--clients N]

One process per client (the GIL would serialise threads), each with its own connection; the
lock is redis.lock.Lock with its defaults (SET NX PX, sleep 0.1 s between tries, Lua release).
Prints one JSON line: ops per second and the per-client spread, as dlock-bench does.
"""
import argparse
import json
import multiprocessing
import os
import time
import urllib.parse

import redis


def client(url, key, iterations, counter_key, start, results):
    parts = urllib.parse.urlparse(url)
    r = redis.Redis(host=parts.hostname, port=parts.port or 6379)
    lock = r.lock(key, timeout=30)
    done = 0
    start.wait()
    while True:
        lock.acquire()
        ticket = r.incr(counter_key)
        lock.release()
        if ticket > iterations:
            break
        done += 1
    results.put(done)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True)
    parser.add_argument("--scenario", required=True, choices=["uncontended", "contended"])
    parser.add_argument("--iterations", type=int, required=True)
    parser.add_argument("--clients", type=int, default=1)
    args = parser.parse_args()
    clients = 1 if args.scenario == "uncontended" else args.clients
    base = "/bench/redis-py/%s-%d" % (args.scenario, os.getpid())
    start = multiprocessing.Event()
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=client, args=(
        args.backend, base + "/lock", args.iterations, base + "/tickets", start, results))
        for _ in range(clients)]
    for worker in workers:
        worker.start()
    time.sleep(0.5)  # every client connected
    began = time.monotonic()
    start.set()
    counts = [results.get() for _ in workers]
    elapsed = time.monotonic() - began
    for worker in workers:
        worker.join()
    print(json.dumps({"impl": "redis-py", "scenario": args.scenario, "clients": clients,
                      "iterations": args.iterations, "elapsed_s": round(elapsed, 6),
                      "ops_per_s": round(args.iterations / elapsed, 2),
                      "per_client_min": min(counts), "per_client_max": max(counts)}))


if __name__ == "__main__":
    main()
