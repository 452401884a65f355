// An Apache Curator process of the interoperability tests: the counter loop of
// tests/integration/counter_worker.cc (lock, read the counter file, sleep, write counter+1,
// unlock) with Curator's own locks, so dlock and Curator processes can share one lock path.
//
//   java CuratorWorker mutex|write|read CONNECT LOCK_PATH COUNTER_FILE ITERATIONS
//
// CONNECT may carry a chroot ("127.0.0.1:2181/some/root"). mutex uses InterProcessMutex,
// write and read the two sides of InterProcessReadWriteLock; a reader checks that the counter
// does not change while it holds the read lock. Prints one summary line; exit 0 on success,
// 3 if a reader saw the counter change under it.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorWorker {
  private static long readCounter(Path file) throws Exception {
    try {
      String text = new String(Files.readAllBytes(file), StandardCharsets.US_ASCII).trim();
      return text.isEmpty() ? 0 : Long.parseLong(text);
    } catch (NoSuchFileException e) {
      return 0;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: CuratorWorker mutex|write|read CONNECT LOCK_PATH COUNTER_FILE N");
      System.exit(2);
    }
    String mode = args[0];
    Path counter = Paths.get(args[3]);
    int iterations = Integer.parseInt(args[4]);
    int unstableReads = 0;
    try (CuratorFramework client =
        CuratorFrameworkFactory.newClient(args[1], 10000, 10000, new ExponentialBackoffRetry(100, 3))) {
      client.start();
      InterProcessLock lock;
      switch (mode) {
        case "mutex": lock = new InterProcessMutex(client, args[2]); break;
        case "write": lock = new InterProcessReadWriteLock(client, args[2]).writeLock(); break;
        case "read": lock = new InterProcessReadWriteLock(client, args[2]).readLock(); break;
        default: throw new IllegalArgumentException("unknown mode " + mode);
      }
      for (int i = 0; i < iterations; ++i) {
        lock.acquire();
        try {
          long value = readCounter(counter);
          Thread.sleep(2);
          if (mode.equals("read")) {
            if (readCounter(counter) != value) ++unstableReads;
          } else {
            Files.write(counter, (value + 1 + "\n").getBytes(StandardCharsets.US_ASCII));
          }
        } finally {
          lock.release();
        }
      }
    }
    System.out.println("curator: mode=" + mode + " iterations=" + iterations
        + " unstable_reads=" + unstableReads);
    System.exit(unstableReads == 0 ? 0 : 3);
  }
}
