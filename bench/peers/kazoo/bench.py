"""The kazoo peer of the lock benchmark contract (docs/benchmarks.md, "Method").

kazoo 2.8 (Debian python3-kazoo) Lock, ReadLock and WriteLock. A client is a forked process
with its own KazooClient; uncontended and many-locks run in one process (many-locks with a
pool of M threads on one client). One JSON line on stdout.
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import random
import resource
import sys
import threading
import time

from kazoo.client import KazooClient

STALL_S = 20  # an acquire waiting this long is a deadlock (kazoo 2.8's rw lock has one)


def cpu_ns():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return int((u.ru_utime + u.ru_stime) * 1e9)


def percentile_us(ns, p):
    if not ns:
        return 0.0
    s = sorted(ns)
    return s[max(math.ceil(p / 100 * len(s)), 1) - 1] / 1000


def connect(zk):
    c = KazooClient(hosts=zk, timeout=30)
    c.start(timeout=30)
    return c


def handles(client, path, rw):
    """(read side, write side); a mutex is its own write side."""
    if rw:
        return client.ReadLock(path), client.WriteLock(path)
    m = client.Lock(path)
    return m, m


def run_tickets(locks, ticket, count, rw, client_id, out):
    while True:
        with ticket.get_lock():
            t = ticket.value
            ticket.value += 1
        if t >= count:
            return
        write = not rw or t % 10 == 9
        lock = locks[1] if write else locks[0]
        call = time.monotonic_ns()
        if not lock.acquire(timeout=STALL_S):
            raise RuntimeError("stalled: no acquire within %d s" % STALL_S)
        got = time.monotonic_ns()
        releasing = time.monotonic_ns()
        lock.release()
        if out is not None:
            out.append((call, got, releasing, time.monotonic_ns(), client_id, write))


def client_main(a, cid, base, rw, meeting, warm_ticket, ticket, warmup, results):
    try:
        c = connect(a.zk)
        warm, lock = handles(c, base + "/warm", rw), handles(c, base + "/lock", rw)
        meeting.wait()
        run_tickets(warm, warm_ticket, warmup, rw, cid, None)
        meeting.wait()
        meeting.wait()
        cpu0, ops = cpu_ns(), []
        run_tickets(lock, ticket, a.iterations, rw, cid, ops)
        results.put((ops, time.monotonic_ns(), cpu_ns() - cpu0, None))
        c.stop()
    except Exception as e:  # reported by the parent
        print("kazoo client %d: %r" % (cid, e), file=sys.stderr)
        results.put(([], 0, 0, repr(e)))
        meeting.abort()


def contention(a, base):
    rw = a.scenario == "rw"
    n = 1 if a.scenario == "uncontended" else a.clients
    warmup = (a.iterations + 9) // 10
    ctx = mp.get_context("fork")
    meeting = ctx.Barrier(n + 1, timeout=300)
    warm_ticket, ticket, results = ctx.Value("q", 0), ctx.Value("q", 0), ctx.Queue()
    procs = [ctx.Process(target=client_main,
                         args=(a, i, base, rw, meeting, warm_ticket, ticket, warmup, results))
             for i in range(n)]
    for p in procs:
        p.start()
    try:
        meeting.wait()
        meeting.wait()
        start = time.monotonic_ns()
        meeting.wait()
    except threading.BrokenBarrierError:  # a client failed: report its error
        raise RuntimeError(results.get(timeout=30)[3]) from None
    ops, ends, cpu = [], [], 0
    for _ in procs:
        got, end, used, error = results.get(timeout=300)
        if error:
            raise RuntimeError(error)
        ops += got
        ends.append(end)
        cpu += used
    for p in procs:
        p.join()
    elapsed = (max(ends) - start) / 1e9
    out = dict(impl="kazoo", scenario=a.scenario, clients=n, iterations=a.iterations,
               warmup=warmup, elapsed_s=elapsed, ops_per_s=a.iterations / elapsed)
    if a.scenario == "uncontended":
        cycle = [o[3] - o[0] for o in ops]
        out.update(p50_us=percentile_us(cycle, 50), p99_us=percentile_us(cycle, 99))
    else:
        wait = [o[1] - o[0] for o in ops]
        out.update(p50_us=percentile_us(wait, 50), p99_us=percentile_us(wait, 99))
        ops.sort(key=lambda o: o[1])
        per_client = [0] * n
        handoff, violations, latest_end = [], 0, -1
        for i, o in enumerate(ops):
            per_client[o[4]] += 1
            if i:
                handoff.append(o[1] - ops[i - 1][2])
            earlier = o[1] < latest_end
            later = i + 1 < len(ops) and ops[i + 1][1] < o[2]
            violations += o[5] and (earlier or later)
            latest_end = max(latest_end, o[2])
        if rw:
            reads = [o[1] - o[0] for o in ops if not o[5]]
            writes = [o[1] - o[0] for o in ops if o[5]]
            out.update(read_p50_us=percentile_us(reads, 50), write_p50_us=percentile_us(writes, 50),
                       write_p99_us=percentile_us(writes, 99))
        else:
            out.update(handoff_p50_us=percentile_us(handoff, 50),
                       handoff_p99_us=percentile_us(handoff, 99))
        out.update(per_client_min=min(per_client), per_client_max=max(per_client),
                   violations=int(violations))
    out.update(async_release=False, processes=n, cpu_us_per_op=cpu / 1000 / a.iterations)
    return out


def many_locks(a, base):
    m = a.locks
    rounds = math.ceil(a.iterations / m)
    warm_rounds = math.ceil(((a.iterations + 9) // 10) / m)
    c = connect(a.zk)
    warm = [c.Lock("%s/warm/lock-%d" % (base, i)) for i in range(m)]
    measured = [c.Lock("%s/lock/lock-%d" % (base, i)) for i in range(m)]
    # kazoo's Lock is synchronous: M threads, each takes one lock, all meet while holding.
    all_held = threading.Barrier(m + 1, timeout=300)
    released = threading.Barrier(m + 1, timeout=300)
    current = []

    def worker(i):
        while True:
            all_held.wait()  # start of a round
            if not current:
                return
            current[0][i].acquire(timeout=STALL_S)
            all_held.wait()
            current[0][i].release()
            released.wait()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(m)]
    for t in threads:
        t.start()
    times, cpu0 = [], 0
    for r in range(warm_rounds + rounds):
        if r == warm_rounds:
            cpu0 = cpu_ns()
        current[:] = [warm if r < warm_rounds else measured]
        start = time.monotonic_ns()
        all_held.wait()
        all_held.wait()
        released.wait()
        if r >= warm_rounds:
            times.append(time.monotonic_ns() - start)
    cpu = cpu_ns() - cpu0
    current.clear()
    all_held.wait()
    total = sum(times) / 1e9
    c.stop()
    return dict(impl="kazoo", scenario="many-locks", clients=1, iterations=rounds * m,
                warmup=warm_rounds * m, locks=m, elapsed_s=total, ops_per_s=rounds * m / total,
                p50_us=percentile_us(times, 50), p99_us=percentile_us(times, 99),
                async_release=False, threads=m, cpu_us_per_op=cpu / 1000 / (rounds * m))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zk", required=True)
    p.add_argument("--scenario", required=True)
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--iterations", type=int, required=True)
    p.add_argument("--locks", type=int, default=100)
    a = p.parse_args()
    base = "/bench/kazoo/%s-%d-%d" % (a.scenario, os.getpid(), random.randrange(10**9))
    try:
        if a.scenario in ("uncontended", "contended", "rw"):
            out = contention(a, base)
        elif a.scenario == "many-locks":
            out = many_locks(a, base)
        else:
            print(json.dumps(dict(impl="kazoo", scenario=a.scenario, unsupported=True)))
            return 3
    except Exception as e:
        print("kazoo: %r" % e, file=sys.stderr)
        print(json.dumps(dict(impl="kazoo", scenario=a.scenario, error=repr(e))))
        return 1
    print(json.dumps(out, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
