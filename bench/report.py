#!/usr/bin/env python3
"""Renders docs/benchmarks.md and its PNG plots from one results file of bench/compare.py.

   bench/report.py bench/results/STAMP.jsonl

Medians with min-max over the rounds; a ratio to a peer ("vs Curator", "vs go-zookeeper") is the
median over rounds of the ratio to the peer's figure at the same point in the same round (docs/bench-contract.md §5). Standard library + gnuplot.
"""
import collections
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO, "docs")
PLOTS = os.path.join(DOCS, "benchmarks")
ENV = os.environ


def load(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    ok = collections.defaultdict(list)  # (point, impl) -> rows of successful runs
    other = {}
    for r in rows:
        key = (r.get("point"), r.get("impl"))
        if r.get("rc") == 0 or (r.get("point", "").startswith(("memory", "startup")) and "error" not in r):
            ok[key].append(r)
        else:
            other.setdefault(key, r)
    return rows, ok, other


def med(rows, field):
    values = [r[field] for r in rows if isinstance(r.get(field), (int, float))]
    return (statistics.median(values), min(values), max(values)) if values else None


def fmt(m, digits=0, spread=True):
    if m is None:
        return "–"
    f = "{:,.%df}" % digits
    if not spread or m[1] == m[2]:
        return f.format(m[0])
    return "%s (%s–%s)" % (f.format(m[0]), f.format(m[1]), f.format(m[2]))


def versus(ok, point, impl, base="curator", field="ops_per_s"):
    """The median over rounds of impl's field divided by base's in the same round."""
    of_base = {r["rep"]: r[field] for r in ok.get((point, base), []) if r.get(field)}
    ratios = [r[field] / of_base[r["rep"]] for r in ok.get((point, impl), [])
              if r["rep"] in of_base and isinstance(r.get(field), (int, float))]
    return (statistics.median(ratios), min(ratios), max(ratios)) if ratios else None


def version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, shell=True).stdout.strip()
    except OSError:
        return "?"


def library(m):
    """The library measured, as compare.sh recorded it at build time."""
    text = "git %s" % m.get("git_rev", "?")
    if str(m.get("tree_files", "0")).strip() not in ("0", "None", ""):
        text += " plus uncommitted changes to %s files under src/, include/ and CMakeLists.txt (diff " \
                "sha256 %s)" % (str(m["tree_files"]).strip(), m.get("tree_diff", "?"))
    return text


def environment():
    """Where the benchmarks run: the machine, and the versions of the server, the C client and
    the peers. compare.py records it in the results, as the page may be rendered elsewhere."""
    cpu = version("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    mem = version("free -g | awk '/Mem:/ {print $2}'")
    deb = lambda p: version("dpkg-query -W -f '${Version}' %s" % p)
    return {
        "machine": "%s, %d cores, %s GiB RAM, Linux %s, Debian %s" % (
            cpu, os.cpu_count(), mem, platform.release(), version("cat /etc/debian_version")),
        "server": "ZooKeeper %s standalone (Debian `zookeeper` %s)" % (
            deb("libzookeeper-java").split("-")[0], deb("libzookeeper-java")),
        "c_client": deb("libzookeeper-mt2"),
        "peers": "Curator %s with %s; kazoo %s on Python %s; go-zookeeper %s with Go %s" % (
            deb("libcurator-recipes-java"), version("java -version 2>&1 | head -1"),
            deb("python3-kazoo"), version("/usr/bin/python3 -V").split()[-1],
            deb("golang-github-samuel-go-zookeeper-dev"), version("go version").split()[2]),
    }


def machine_and_versions(full, extra):
    env = full.get("environment")
    provenance = ""
    if not env:
        env = environment()
        provenance = " (The results file does not record where it ran: this is the machine, and below " \
                     "are the versions, that rendered this page.)"
    return [
        "Machine: %s.%s" % (env["machine"], provenance),
        "Server: %s on 127.0.0.1, started by `scripts/zk-start.sh` (`-Xmx128m -XX:+UseSerialGC`, "
        "`forceSync=no`, so there are no fsyncs to count), shared by every client process on the same "
        "2 cores." % env["server"],
        "dlock: %s (Release build, `build-bench/`), on its own ZooKeeper client (`src/zk/`).%s" % (
            library(full),
            " Memory and start-up were re-measured on %s with `ONLY=extras RESULTS=%s bench/compare.sh`, "
            "library %s." % (extra.get("started"), "bench/results/<this file>", library(extra)) if extra else ""),
        "Peers: %s; naive and raw-c in C++ on the ZooKeeper C client %s." % (env["peers"], env["c_client"]),
    ] + ([
        "`dlock-c-client`: dlock at git %s, its last build on the ZooKeeper C client (Release, built by "
        "`compare.sh` in `build-c-client/`), so that what its own client changed shows in the same run. "
        "The engine and the lock protocol above the client also changed since." % full["c_client_rev"]]
        if full.get("c_client_rev") else [])


COLUMNS = ["ops/s median (min–max)", "vs Curator", "p50 µs", "hand-off p50 µs",
           "srv req/op", "srv notif./op", "client CPU µs/op", "violations", "per client min/max"]


def main_table(ok, other, points):
    out = ["| point | impl | " + " | ".join(COLUMNS) + " |", "|" + "---|" * (len(COLUMNS) + 2)]
    for point in points:
        impls = sorted({i for (p, i) in list(ok) + list(other) if p == point},
                       key=lambda i: (i != "dlock", i != "dlock-async", i != "curator", i))
        for impl in impls:
            rows = ok.get((point, impl))
            if not rows:
                r = other[(point, impl)]
                why = "unsupported" if r.get("rc") == 3 else "failed: %s" % str(r.get("error", r.get("rc")))[:90]
                out.append("| %s | %s | %s |" % (point, display(impl), why) + " |" * (len(COLUMNS) - 1))
                continue
            ratio = versus(ok, point, impl)
            pc = "%d/%d" % (rows[0]["per_client_min"], rows[0]["per_client_max"]) if "per_client_min" in rows[0] else "–"
            if len(rows) > 1 and "per_client_min" in rows[0]:
                pc = "%d/%d" % (min(r["per_client_min"] for r in rows), max(r["per_client_max"] for r in rows))
            viol = med(rows, "violations")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                point, "**%s**" % impl if impl == "dlock" else display(impl), fmt(med(rows, "ops_per_s")),
                fmt(ratio, 2, False) if ratio and impl != "curator" else "–", fmt(med(rows, "p50_us"), 0, False),
                fmt(med(rows, "handoff_p50_us"), 0, False), fmt(med(rows, "srv_pkts_per_op"), 2, False),
                fmt(med(rows, "srv_watch_events_per_op"), 2, False), fmt(med(rows, "cpu_us_per_op"), 0, False),
                "%d" % max(r.get("violations", 0) for r in rows) if viol else ("0" if viol else "–"), pc))
    return out


def herd_table(ok, other):
    out = ["| lock | waiters | notifications per op (server) | requests per op (server) | ops/s | violations |",
           "|---|---|---|---|---|---|"]
    for scenario, impls in (("contended", ("naive", "dlock")), ("rw", ("seed-parent-rw", "dlock"))):
        for impl in impls:
            for n in (2, 11, 51):
                rows = ok.get(("herd-%s-%d" % (scenario, n), impl))
                name = {"naive": "simple lock (all watch one node)",
                        "seed-parent-rw": "rw lock (all watch the directory)",
                        "dlock": "dlock Mutex" if scenario == "contended" else "dlock SharedMutex"}[impl]
                if not rows:
                    out.append("| %s | %d | failed | | | |" % (name, n - 1))
                    continue
                r = rows[0]
                out.append("| %s | %d | %.2f | %.2f | %.0f | %d |" % (
                    name, n - 1, r["srv_watch_events_per_op"], r["srv_pkts_per_op"], r["ops_per_s"],
                    r.get("violations", 0)))
    return out


# How each implementation looks in every plot. Colours are the Okabe-Ito palette, safe for the
# common colour-vision deficiencies (its pale yellow left out); dash and point types differ too,
# so that the series stay apart when printed in grey.
# (colour, gnuplot dash type, gnuplot point type)
STYLES = {
    "dlock": ("#0072B2", "1", 7),
    "curator": ("#D55E00", "(12,6)", 5),
    "go-zookeeper": ("#009E73", "(3,4)", 9),
    "kazoo": ("#CC79A7", "(12,5,3,5)", 13),
    "naive": ("#000000", "(6,4)", 6),
    "seed-parent-rw": ("#E69F00", "(12,4,3,4,3,4)", 4),
    "raw-c": ("#56B4E9", "(20,8)", 12),
    "dlock-shared": ("#0072B2", "(12,6)", 11),  # dlock's colour: only in the herd plot, beside dlock
    "dlock-async": ("#0072B2", "(4,3)", 10),  # dlock's colour: beside dlock in the contended plots
}
# Shown instead of the name a results file records.
DISPLAY_NAMES = {"seed-parent-rw": "parent-rw"}


def display(impl):
    return DISPLAY_NAMES.get(impl, impl)


def plot(series, xlabel, xtics, ylabel, name, title, key="outside right top"):
    """Draws one PNG: `series` is [(style, label, [(x, median, min, max), ...])]."""
    with tempfile.TemporaryDirectory() as tmp:
        commands = []
        for index, (style, label, points) in enumerate(series):
            if not points:
                continue
            path = os.path.join(tmp, "%d.dat" % index)
            with open(path, "w") as f:
                f.writelines("%s %f %f %f\n" % point for point in points)
            colour, dash, point = STYLES[style]
            # The min-max bars solid, whatever the series' dash type: dotted bars are hard to see.
            commands.append("'%s' using 1:2:3:4 with yerrorbars lw 1.5 lc rgb '%s' dt 1 pt %d ps 1.4 notitle"
                            % (path, colour, point))
            commands.append("'%s' using 1:2 with linespoints lw %s lc rgb '%s' dt %s pt %d ps 1.4 title '%s'"
                            % (path, 3 if style.startswith("dlock") else 2.5, colour, dash, point, label))
        script = """set terminal pngcairo size 800,480 font ',11'
set output '%s'
set title '%s'
set xlabel '%s'
set ylabel '%s'
set logscale x
set xrange [%s:%s]
set xtics (%s)
set yrange [0:*]
set key %s
set grid lc rgb '#c0c0c0' dt 3
plot %s
""" % (os.path.join(PLOTS, name), title, xlabel, ylabel, min(xtics) / 1.3, max(xtics) * 1.3,
       ", ".join(str(x) for x in xtics), key, ", ".join(commands))
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def measured(ok, impl, points, field):
    """(x, median, min, max) of `field` over the rounds at each (x, point) that has results."""
    found = []
    for x, point in points:
        m = med(ok.get((point, impl), []), field)
        if m:
            found.append((x,) + m)
    return found


def plots(ok):
    """One plot per headline claim, into docs/benchmarks/."""
    clients = (1, 2, 8, 32)
    contended = [(n, "contended-%d" % n) for n in clients]
    peers = ["dlock", "dlock-async", "curator", "go-zookeeper", "kazoo", "naive"]
    plot([(i, display(i), measured(ok, i, contended, "ops_per_s")) for i in peers],
         "contending clients, each with its own session (log scale)", clients,
         "acquire+release per second", "contended-throughput.png",
         "One lock, N clients: throughput (median, min-max over rounds)")
    plot([(i, display(i), measured(ok, i, contended, "handoff_p50_us")) for i in peers],
         "contending clients, each with its own session (log scale)", clients,
         "hand-off p50 (µs)", "handoff-latency.png",
         "One lock, N clients: release-to-next-holder latency (median, min-max over rounds)")
    waiters = (1, 10, 50)
    herd = [("naive", "naive", "simple lock: all watch one node", "contended"),
            ("dlock", "dlock", "dlock Mutex", "contended"),
            ("seed-parent-rw", "seed-parent-rw", "rw lock: all watch the directory", "rw"),
            ("dlock", "dlock-shared", "dlock SharedMutex", "rw")]
    plot([(style, label, measured(ok, impl, [(w, "herd-%s-%d" % (scenario, w + 1)) for w in waiters],
                                  "srv_watch_events_per_op"))
          for impl, style, label, scenario in herd],
         "waiters (log scale)", waiters, "watch notifications per acquire+release",
         "herd.png", "Herd effect: notifications the server sends per operation",
         key="inside left top box opaque")
    sizes = (100, 1000)
    plot([(i, display(i), measured(ok, i, [(m, "many-locks-%d" % m) for m in sizes], "ops_per_s"))
          for i in ("dlock", "curator", "go-zookeeper", "kazoo", "raw-c")],
         "locks held at once by one session (log scale)", sizes, "locks acquired+released per second",
         "many-locks.png", "Many locks on one session: throughput (median, min-max over rounds)")
    rw_clients = (8, 32)
    plot([(i, display(i), measured(ok, i, [(n, "rw-%d" % n) for n in rw_clients], "ops_per_s"))
          for i in ("dlock", "curator", "kazoo", "seed-parent-rw")],
         "clients, 90 % readers (log scale)", rw_clients, "acquire+release per second",
         "read-write.png", "Read-write lock, N clients: throughput (median, min-max over rounds)")


def targets(ok, extras):
    def field(point, impl, f):
        m = med(ok.get((point, impl), []), f)
        return m[0] if m else None

    rows = []

    def check(name, value, goal, good, unit=""):
        if value is None:
            rows.append("| %s | %s | not measured | – |" % (name, goal))
            return
        rows.append("| %s | %s | %s%s | %s |" % (name, goal, ("%.3f" % value) if value < 10 else ("%.0f" % value),
                                               unit, "met" if good(value) else "**missed**"))

    r = versus(ok, "uncontended", "dlock")
    check("uncontended vs Curator", r and r[0], "≥ 2.5x", lambda v: v >= 2.5, "x")
    r = versus(ok, "uncontended", "dlock", "raw-c:uncontended-1rtt")
    check("uncontended vs raw C client (pipelined create+getChildren, unawaited delete)",
          r and r[0], "≥ 0.85x", lambda v: v >= 0.85, "x")
    for n in (8, 32):
        p = "contended-%d" % n
        r = versus(ok, p, "dlock")
        check("contended %d: ops/s vs Curator" % n, r and r[0], "≥ 1.5x", lambda v: v >= 1.5, "x")
        r = versus(ok, p, "dlock", "curator", "handoff_p50_us")
        check("contended %d: hand-off p50 vs Curator" % n, r and r[0], "≤ 0.6x", lambda v: v <= 0.6, "x")
        check("contended %d: server notifications per release" % n, field(p, "dlock", "srv_watch_events_per_op"),
              "1.0 (±0.01)", lambda v: abs(v - 1.0) <= 0.01)
        rws = ok.get((p, "dlock"), [])
        check("contended %d: violations (max over rounds)" % n,
              float(max((x["violations"] for x in rws), default=0)) if rws else None, "0", lambda v: v == 0)
        check("contended %d: per-client max/min (worst round)" % n,
              max((x["per_client_max"] / max(x["per_client_min"], 1) for x in rws), default=None) if rws else None,
              "≤ 2", lambda v: v <= 2)
    for m in (100, 1000):
        p = "many-locks-%d" % m
        r = versus(ok, p, "dlock", "raw-c:pipelined-cgd")
        check("many-locks %d: vs raw pipelined create+getChildren+delete" % m, r and r[0],
              "≥ 0.9x", lambda v: v >= 0.9, "x")
        r = versus(ok, p, "dlock", "curator", "cpu_us_per_op")
        check("many-locks %d: client CPU/op vs Curator" % m, r and r[0], "≤ 0.4x", lambda v: v <= 0.4, "x")
    for n in (8, 32):
        p = "rw-%d" % n
        r = versus(ok, p, "dlock")
        check("rw %d: ops/s vs Curator" % n, r and r[0], "≥ 1.3x", lambda v: v >= 1.3, "x")
        check("rw %d: server notifications per op" % n, field(p, "dlock", "srv_watch_events_per_op"),
              "≤ 1.0 (+0.01)", lambda v: v <= 1.01)
    # The bar of issue 13 (dlock's own ZooKeeper client): go-zookeeper, ratios within each round;
    # for the contended points both ways of calling dlock (a thread in lock(), and async_acquire).
    for p in ("contended-2", "contended-8", "contended-32", "many-locks-100", "many-locks-1000"):
        for impl, how in (("dlock", ""), ("dlock-async", " (dlock-async)")):
            if impl == "dlock-async" and p.startswith("many-locks"):
                continue  # many-locks is async_acquire already
            r = versus(ok, p, impl, "go-zookeeper")
            check("%s: ops/s vs go-zookeeper%s" % (p.replace("-", " "), how), r and r[0], "≥ 1.2x",
                  lambda v: v >= 1.2, "x")
    for p in ("contended-2", "contended-8", "contended-32"):
        for impl, how in (("dlock", ""), ("dlock-async", " (dlock-async)")):
            r = versus(ok, p, impl, "go-zookeeper", "handoff_p50_us")
            check("%s: hand-off p50 vs go-zookeeper%s" % (p.replace("-", " "), how), r and r[0], "≤ 1.0x",
                  lambda v: v <= 1.0, "x")
    for p in ("uncontended", "contended-1", "contended-2", "contended-8", "contended-32", "many-locks-100",
              "many-locks-1000"):
        r = versus(ok, p, "dlock", "go-zookeeper", "cpu_us_per_op")
        check("%s: client CPU/op vs go-zookeeper" % p.replace("-", " "), r and r[0], "≤ 1.0x",
              lambda v: v <= 1.0, "x")
    memory = extras.get("memory-dlock")
    check("client memory per held lock (10,000 on one session)", memory and memory.get("bytes_per_lock"),
          "< 1024 B", lambda v: v < 1024, " B")
    start = extras.get("startup")
    check("`dlock run -n NAME -- true`, median", start and start.get("median_ms"), "< 50 ms",
          lambda v: v < 50, " ms")
    return ["| target | goal | dlock | verdict |", "|---|---|---|---|"] + rows


def main():
    path = sys.argv[1]
    rows, ok, other = load(path)
    os.makedirs(PLOTS, exist_ok=True)
    extras = {}
    for r in rows:  # the last record of each wins: ONLY=extras re-measurements replace earlier ones
        if r.get("point", "").startswith(("memory", "startup")):
            extras[r["point"]] = r
    plots(ok)
    points = []
    for r in rows:
        p = r.get("point", "")
        if p and not p.startswith(("herd", "memory", "startup", "meta")) and p not in points:
            points.append(p)
    metas = [r for r in rows if r.get("point") == "meta"]
    full = next((m for m in metas if m.get("kind") == "full"), {})
    extra = next((m for m in reversed(metas) if m.get("kind") == "extras"), None)
    seconds = next((r["seconds"] for r in rows if r.get("point") == "meta-end"), "?")
    reps = full.get("repeats", max((r.get("rep", 1) for r in rows), default=1))
    rel = os.path.relpath(path, REPO)
    md = ["# Benchmarks", "",
          "dlock beside Curator, kazoo and go-zookeeper on one standalone ZooKeeper, plus two simpler lock "
          "designs common in tutorials (to measure their herd effect) and the raw C client (the protocol's "
          "floor). "
          "Generated by `bench/compare.sh`; do not edit by hand.", "",
          "## How this page was made", "",
          "- Command: `%s`, started %s; the runs took %s s on this machine (installing and building "
          "come on top). Raw results: `%s`." % (full.get("command", "bench/compare.sh"), full.get("started", "?"),
                                                seconds, rel),
          "- Settings: %d rounds, every point once per round in the same order (A B C A B C ...), "
          "K per implementation from a pilot so that one run takes about %s s (quick mode: %s)." % (
              reps, full.get("target_s", 6), full.get("quick", False)),
          "- Re-render the page from the raw results without rerunning: `bench/report.py %s`." % rel,
          "- The other backends beside the locks users write by hand (redis-py, node-redlock, "
          "psycopg, PyMySQL): [benchmarks-servers.md](benchmarks-servers.md) "
          "(`bench/servers.sh`)."]
    md += ["- " + line for line in machine_and_versions(full, extra)]
    md += ["", "## Method", "",
           "Every implementation is one program following the "
           "[lock benchmark contract](bench-contract.md): `--zk HOST:PORT --scenario NAME --clients N --iterations K "
           "[--locks M]`, one JSON line on stdout. Each client has its own ZooKeeper session (30 s timeout); "
           "W = ceil(K/10) warm-up ops on `…/warm`, then all clients start together; hold time is zero; "
           "percentiles are nearest-rank. One op is one acquire followed by its release.",
           "",
           "- `uncontended`: one client, K cycles on one lock; p50 is the whole acquire+release cycle.",
           "- `contended`: N clients share one lock and a ticket counter (exactly K acquisitions); p50 is the "
           "acquire wait; hand-off is the time from the previous holder's release call to the next "
           "acquire's return; violations counts held intervals that overlap (must be 0).",
           "- `many-locks`: one session, M locks; a round acquires all M (all held at once) and releases "
           "them; p50 is one round. dlock issues the M `async_acquire` calls from one thread; Curator uses "
           "one CuratorFramework and min(M,100) threads (its mutex belongs to the acquiring thread); kazoo "
           "M threads; go-zookeeper M goroutines.",
           "- `rw`: like contended on one read-write lock; ticket t writes when t mod 10 = 9 (10 % writes).",
           "- `dlock` is each client a thread that calls `lock()` and `unlock()`, as the peers' clients "
           "do. `dlock-async` is the same library called the other way its API offers: each client "
           "a chain of `async_acquire` callbacks (`dlock-bench --strategy dlock-async`), each callback "
           "releasing the lease, taking the next ticket and starting the next acquisition on the "
           "library's thread, with no thread of the client's own woken per operation.",
           "- dlock's release does not wait for the server (`async_release`); before its clock stops, each "
           "client does one read on its session, which ZooKeeper answers after all earlier requests of that "
           "session, so every delete has been applied.",
           "- Server-side columns come from `mntr` read right before and after each process, divided by "
           "iterations + warm-up: `srv req/op` is `zk_packets_received` (includes connects, pings and the "
           "harness's own `mntr`), `srv notif./op` is the sum of `zk_sum_node_{deleted,created,changed,children}"
           "_watch_count`. Client CPU is getrusage (all threads/processes; the JVM's process CPU time) over the "
           "measured phase divided by K.",
           "- raw-c rows: `raw-c` is three synchronous requests (create, getChildren, delete); "
           "`raw-c:uncontended-1rtt` pipelines create+getChildren and does not await the delete; "
           "`raw-c` in many-locks pipelines the M create+getChildren pairs then the M deletes; "
           "`raw-c:pipelined-cgd` keeps 128 create+getChildren+delete cycles in flight on one session "
           "(the server's throughput for that message pattern).",
           "- `naive` is a simple non-fair lock where every waiter watches the lock node (everyone creates "
           "`<lock>/x`, losers watch it with `exists` and try again when it goes); `parent-rw` is a read-write "
           "lock where every waiter watches the lock directory's children. Both are common in tutorials, "
           "and both wake every waiter on each release (a herd). They are "
           "`dlock-bench --strategy simple|parent-rw`.",
           "", "## Targets", ""]
    md += targets(ok, extras)
    md += ["", "## Results (medians over rounds, min–max in brackets)", ""]
    md += main_table(ok, other, points)
    md += ["", "![contended throughput](benchmarks/contended-throughput.png)", "",
           "![hand-off latency](benchmarks/handoff-latency.png)", "",
           "![many locks](benchmarks/many-locks.png)", "",
           "![read-write lock](benchmarks/read-write.png)", "",
           "## Herd effect: watch notifications per operation", "",
           "One run each, K=%s, server-side counts. N clients means N-1 waiters." % full.get("herd_k", "?"), ""]
    md += herd_table(ok, other)
    md += ["", "![herd effect](benchmarks/herd.png)"]
    md += ["", "## Memory and start-up", ""]
    mem_d, mem_c, start = extras.get("memory-dlock", {}), extras.get("memory-curator", {}), extras.get("startup", {})
    md.append("| measurement | dlock | Curator (JVM) |")
    md.append("|---|---|---|")
    md.append("| client memory per held lock, %s locks on one session (RSS growth) | %s B | %s B |" % (
        mem_d.get("locks_held", "?"), "%.0f" % mem_d["bytes_per_lock"] if "bytes_per_lock" in mem_d else "–",
        "%.0f" % mem_c["bytes_per_lock"] if "bytes_per_lock" in mem_c else "–"))
    md.append("| client heap per held lock, same run (bytes the allocator has handed out) | %s | – |" % (
        "%.0f B" % mem_d["heap_bytes_per_lock"] if "heap_bytes_per_lock" in mem_d else "–"))
    md.append("| RSS of a process holding one lock | %s | %s |" % (
        "%d KiB (`dlock run`)" % start["rss_holding_one_kib"] if "rss_holding_one_kib" in start
        else "pending: the `dlock run` CLI was not built yet",
        "%d KiB" % mem_c["rss_one_lock_kib"] if "rss_one_lock_kib" in mem_c else "–"))
    md.append("| `dlock run -n NAME -- true` wall time (connect, acquire, run, release, exit) | %s | – |" % (
        "median %.1f ms (min %.1f, max %.1f) over %d runs, %d failed" % (
            start["median_ms"], start["min_ms"], start["max_ms"], start["runs"], start.get("failed_runs", 0))
        if "median_ms" in start
        else "pending: the CLI was not built yet" if start.get("pending") else "failed: %s" % start.get("error", "?")))
    md += ["", "dlock's figure: `dlock-bench-memory` takes one lock first (one-time allocations belong to the "
           "baseline), then holds 10,000 `dlock::Mutex` on one session via `async_acquire`, 100 in flight at once "
           "(as Curator's 100 threads), and measures 2 s after the last one is granted, once every holder has set "
           "the watch on its own node that it sets 1 s after acquiring; the growth includes the Mutex handles and "
           "Leases. "
           "`dlock-bench-memory --exit-holding` under heaptrack lists what each held lock keeps, by allocation "
           "site. Curator's: 100 threads on one CuratorFramework each acquire 100 "
           "`InterProcessMutex` and park while holding them (its mutex belongs to the acquiring thread), after "
           "`System.gc()`; the growth includes those threads' stacks.", ""]
    notes = os.path.join(REPO, "bench", "analysis.md")
    if os.path.exists(notes):
        md += [open(notes).read().rstrip(), ""]
    with open(os.path.join(DOCS, "benchmarks.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
