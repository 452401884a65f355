#!/usr/bin/python3
"""A kazoo process of the interoperability tests: the counter loop of
tests/integration/counter_worker.cc with kazoo's own locks.

    kazoo_worker.py mutex|write|read CONNECT LOCK_PATH COUNTER_FILE ITERATIONS

CONNECT may carry a chroot ("127.0.0.1:2181/some/root"). mutex uses kazoo's Lock, write and
read its WriteLock and ReadLock; a reader checks that the counter does not change while it
holds the read lock. Prints one summary line; exit 0 on success, 3 if a reader saw the
counter change under it. Run with Debian's /usr/bin/python3 (python3-kazoo).
"""
import sys
import time

from kazoo.client import KazooClient


def read_counter(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        return 0
    return int(text) if text else 0


def main():
    if len(sys.argv) != 6:
        print("usage: kazoo_worker.py mutex|write|read CONNECT LOCK_PATH COUNTER_FILE N",
              file=sys.stderr)
        return 2
    mode, connect, lock_path, counter, iterations = sys.argv[1:]
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=10)
    make_lock = {"mutex": client.Lock, "write": client.WriteLock, "read": client.ReadLock}[mode]
    lock = make_lock(lock_path)
    unstable_reads = 0
    try:
        for _ in range(int(iterations)):
            with lock:
                value = read_counter(counter)
                time.sleep(0.002)
                if mode == "read":
                    unstable_reads += read_counter(counter) != value
                else:
                    with open(counter, "w") as f:
                        f.write("%d\n" % (value + 1))
    finally:
        client.stop()
        client.close()
    print("kazoo: mode=%s iterations=%s unstable_reads=%d" % (mode, iterations, unstable_reads))
    return 0 if unstable_reads == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
