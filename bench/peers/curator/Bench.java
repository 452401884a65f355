// The Curator peer of the lock benchmark contract (docs/benchmarks.md, "Method"): Curator 5.4's
// InterProcessMutex and InterProcessReadWriteLock from Debian's jars. A client is a thread
// with its own CuratorFramework. Extra scenario `memory`: RSS growth for --locks held locks.
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;

public final class Bench {
  static String zk, scenario;
  static int clients = 1, locks = 100;
  static long iterations;

  record Op(long acquireCall, long acquireReturn, long releaseCall, int client, boolean write) {}

  public static void main(String[] argv) throws Exception {
    for (int i = 0; i + 1 < argv.length; i += 2) {
      switch (argv[i]) {
        case "--zk" -> zk = argv[i + 1];
        case "--scenario" -> scenario = argv[i + 1];
        case "--clients" -> clients = Integer.parseInt(argv[i + 1]);
        case "--iterations" -> iterations = Long.parseLong(argv[i + 1]);
        case "--locks" -> locks = Integer.parseInt(argv[i + 1]);
        default -> throw new IllegalArgumentException("unknown option " + argv[i]);
      }
    }
    String base = "/bench/curator/" + scenario + "-" + ProcessHandle.current().pid() + "-"
        + new Random().nextInt(1_000_000_000);
    try {
      String json = switch (scenario) {
        case "uncontended", "contended", "rw" -> contention(base);
        case "many-locks" -> manyLocks(base);
        case "memory" -> memory(base);
        default -> null;
      };
      if (json == null) {
        System.out.println("{\"impl\":\"curator\",\"scenario\":\"" + scenario + "\",\"unsupported\":true}");
        System.exit(3);
      }
      System.out.println(json);
      System.exit(0);
    } catch (Throwable t) {
      t.printStackTrace();
      System.out.println("{\"impl\":\"curator\",\"scenario\":\"" + scenario + "\",\"error\":\""
          + String.valueOf(t).replace("\"", "'") + "\"}");
      System.exit(1);
    }
  }

  static CuratorFramework connect() throws InterruptedException {
    CuratorFramework c = CuratorFrameworkFactory.newClient(zk, 30_000, 15_000, new RetryNTimes(3, 100));
    c.start();
    if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no session");
    return c;
  }

  static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /** Nearest rank (contract §2), in microseconds. */
  static double percentile(List<Long> nanos, double p) {
    if (nanos.isEmpty()) return 0;
    List<Long> s = new ArrayList<>(nanos);
    Collections.sort(s);
    int rank = (int) Math.ceil(p / 100.0 * s.size());
    return s.get(Math.max(rank, 1) - 1) / 1000.0;
  }

  /** A lock handle per client and path; for rw, index 0 is the read side and 1 the write side. */
  static InterProcessLock[] handles(CuratorFramework c, String path, boolean rw) {
    if (!rw) return new InterProcessLock[] {new InterProcessMutex(c, path)};
    InterProcessReadWriteLock l = new InterProcessReadWriteLock(c, path);
    return new InterProcessLock[] {l.readLock(), l.writeLock()};
  }

  static void tickets(InterProcessLock[] h, AtomicLong next, long count, boolean rw, int client,
      List<Op> out) throws Exception {
    for (long t; (t = next.getAndIncrement()) < count; ) {
      boolean write = !rw || t % 10 == 9;
      InterProcessLock lock = h[write && rw ? 1 : 0];
      long call = System.nanoTime();
      lock.acquire();
      long got = System.nanoTime();
      long releasing = System.nanoTime();
      lock.release();
      if (out != null) out.add(new Op(call, got, releasing, client, write));
      if (out != null && scenario.equals("uncontended")) out.set(out.size() - 1,
          new Op(call, got, System.nanoTime(), client, write));  // cycle ends when release returns
    }
  }

  static String contention(String base) throws Exception {
    boolean rw = scenario.equals("rw");
    int n = scenario.equals("uncontended") ? 1 : clients;
    long warmup = (iterations + 9) / 10;
    CyclicBarrier meeting = new CyclicBarrier(n + 1);
    AtomicLong warmTicket = new AtomicLong(), ticket = new AtomicLong();
    List<List<Op>> records = new ArrayList<>();
    long[] finished = new long[n];
    List<Thread> threads = new ArrayList<>();
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    for (int c = 0; c < n; c++) {
      final int client = c;
      List<Op> mine = new ArrayList<>();
      records.add(mine);
      Thread t = new Thread(() -> {
        try (CuratorFramework cf = connect()) {
          InterProcessLock[] warm = handles(cf, base + "/warm", rw), lock = handles(cf, base + "/lock", rw);
          meeting.await();
          tickets(warm, warmTicket, warmup, rw, client, null);
          meeting.await();
          meeting.await();
          tickets(lock, ticket, iterations, rw, client, mine);
          finished[client] = System.nanoTime();
          meeting.await();  // keep the session until the clock stopped
        } catch (Throwable e) {
          failures.add(e);
          meeting.reset();
        }
      });
      t.start();
      threads.add(t);
    }
    meeting.await(120, TimeUnit.SECONDS);
    meeting.await(300, TimeUnit.SECONDS);
    long cpu0 = cpuNanos(), start = System.nanoTime();
    meeting.await();
    meeting.await(300, TimeUnit.SECONDS);  // RUN_TIMEOUT-sized stall limit
    long cpu = cpuNanos() - cpu0;
    for (Thread t : threads) t.join();
    if (!failures.isEmpty()) throw new RuntimeException(failures.peek());
    long end = Arrays.stream(finished).max().getAsLong();
    double elapsed = (end - start) / 1e9;
    List<Op> ops = new ArrayList<>();
    records.forEach(ops::addAll);
    StringBuilder j = new StringBuilder();
    j.append(String.format(Locale.ROOT,
        "{\"impl\":\"curator\",\"scenario\":\"%s\",\"clients\":%d,\"iterations\":%d,\"warmup\":%d,"
            + "\"elapsed_s\":%.4f,\"ops_per_s\":%.2f",
        scenario, n, iterations, warmup, elapsed, iterations / elapsed));
    List<Long> wait = new ArrayList<>(), reads = new ArrayList<>(), writes = new ArrayList<>();
    for (Op o : ops) {
      long w = (scenario.equals("uncontended") ? o.releaseCall() : o.acquireReturn()) - o.acquireCall();
      wait.add(w);
      (o.write() ? writes : reads).add(o.acquireReturn() - o.acquireCall());
    }
    j.append(String.format(Locale.ROOT, ",\"p50_us\":%.1f,\"p99_us\":%.1f", percentile(wait, 50), percentile(wait, 99)));
    if (!scenario.equals("uncontended")) {
      ops.sort(Comparator.comparingLong(Op::acquireReturn));
      List<Long> handoff = new ArrayList<>();
      long violations = 0, latestEnd = Long.MIN_VALUE;
      int[] perClient = new int[n];
      for (int i = 0; i < ops.size(); i++) {
        Op o = ops.get(i);
        perClient[o.client()]++;
        if (i > 0) handoff.add(o.acquireReturn() - ops.get(i - 1).releaseCall());
        boolean earlier = o.acquireReturn() < latestEnd;
        boolean later = i + 1 < ops.size() && ops.get(i + 1).acquireReturn() < o.releaseCall();
        if (o.write() && (earlier || later)) violations++;
        latestEnd = Math.max(latestEnd, o.releaseCall());
      }
      if (rw) {
        j.append(String.format(Locale.ROOT, ",\"read_p50_us\":%.1f,\"write_p50_us\":%.1f,\"write_p99_us\":%.1f",
            percentile(reads, 50), percentile(writes, 50), percentile(writes, 99)));
      } else {
        j.append(String.format(Locale.ROOT, ",\"handoff_p50_us\":%.1f,\"handoff_p99_us\":%.1f",
            percentile(handoff, 50), percentile(handoff, 99)));
      }
      j.append(String.format(",\"per_client_min\":%d,\"per_client_max\":%d,\"violations\":%d",
          Arrays.stream(perClient).min().getAsInt(), Arrays.stream(perClient).max().getAsInt(), violations));
    }
    j.append(String.format(Locale.ROOT, ",\"async_release\":false,\"threads\":%d,\"cpu_us_per_op\":%.1f}",
        n, cpu / 1000.0 / iterations));
    return j.toString();
  }

  /**
   * One CuratorFramework; the mutex is owned by the acquiring thread, so min(M, 100) threads
   * each take their share of the M locks, a barrier marks "all M held", then each releases its
   * own.
   */
  static String manyLocks(String base) throws Exception {
    int threads = Math.min(locks, 100);
    long rounds = (iterations + locks - 1) / locks;
    long warmRounds = ((iterations + 9) / 10 + locks - 1) / locks;
    try (CuratorFramework cf = connect()) {
      List<InterProcessMutex> warm = new ArrayList<>(), measured = new ArrayList<>();
      for (int i = 0; i < locks; i++) {
        warm.add(new InterProcessMutex(cf, base + "/warm/lock-" + i));
        measured.add(new InterProcessMutex(cf, base + "/lock/lock-" + i));
      }
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CyclicBarrier allHeld = new CyclicBarrier(threads);
      List<Long> roundNanos = new ArrayList<>();
      long cpu0 = 0;
      for (long r = 0; r < warmRounds + rounds; r++) {
        if (r == warmRounds) cpu0 = cpuNanos();
        List<InterProcessMutex> set = r < warmRounds ? warm : measured;
        long start = System.nanoTime();
        List<Future<?>> parts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          final int first = t;
          parts.add(pool.submit(() -> {
            for (int i = first; i < locks; i += threads) set.get(i).acquire();
            allHeld.await();
            for (int i = first; i < locks; i += threads) set.get(i).release();
            return null;
          }));
        }
        for (Future<?> f : parts) f.get(300, TimeUnit.SECONDS);
        if (r >= warmRounds) roundNanos.add(System.nanoTime() - start);
      }
      long cpu = cpuNanos() - cpu0;
      pool.shutdown();
      long total = roundNanos.stream().mapToLong(Long::longValue).sum();
      long n = rounds * locks;
      return String.format(Locale.ROOT,
          "{\"impl\":\"curator\",\"scenario\":\"many-locks\",\"clients\":1,\"iterations\":%d,\"warmup\":%d,"
              + "\"locks\":%d,\"elapsed_s\":%.4f,\"ops_per_s\":%.2f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
              + "\"async_release\":false,\"threads\":%d,\"cpu_us_per_op\":%.1f}",
          n, warmRounds * locks, locks, total / 1e9, n / (total / 1e9), percentile(roundNanos, 50),
          percentile(roundNanos, 99), threads, cpu / 1000.0 / n);
    }
  }

  static long residentKib() throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
    return -1;
  }

  /**
   * Holds --locks InterProcessMutex on one CuratorFramework. Curator's mutex belongs to the
   * acquiring thread, so 100 pool threads each acquire their share and park while holding.
   * Reports RSS after one lock (the "holding one lock" figure) and the growth per held lock.
   */
  static String memory(String base) throws Exception {
    try (CuratorFramework cf = connect()) {
      InterProcessMutex first = new InterProcessMutex(cf, base + "/one");
      first.acquire();
      System.gc();
      Thread.sleep(200);
      long oneKib = residentKib();
      int threads = 100;
      CountDownLatch held = new CountDownLatch(threads), done = new CountDownLatch(1);
      for (int t = 0; t < threads; t++) {
        final int start = t;
        Thread th = new Thread(() -> {
          try {
            for (int i = start; i < locks; i += threads) new InterProcessMutex(cf, base + "/lock-" + i).acquire();
            held.countDown();
            done.await();
          } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
          }
        });
        th.setDaemon(true);
        th.start();
      }
      held.await();
      System.gc();
      Thread.sleep(200);
      long afterKib = residentKib();
      return String.format(Locale.ROOT,
          "{\"impl\":\"curator\",\"scenario\":\"memory\",\"locks_held\":%d,\"rss_one_lock_kib\":%d,"
              + "\"rss_after_kib\":%d,\"bytes_per_lock\":%.1f,\"threads\":%d}",
          locks, oneKib, afterKib, (afterKib - oneKib) * 1024.0 / locks, threads);
    }
  }
}
