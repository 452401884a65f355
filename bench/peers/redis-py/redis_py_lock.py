#!/usr/bin/python3
"""redis-py's Lock (Debian's python3-redis) under the scenarios dlock-bench runs on Redis.

  redis_py_lock.py --backend redis://HOST:PORT --scenario uncontended|contended
                   --iterations K [--clients N]

Each client has its own connection; the lock is redis.lock.Lock with its defaults (SET NX PX,
sleep 0.1 s between tries, Lua release). Prints one JSON line (peer_harness.py).
"""
import os
import sys
import urllib.parse

import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import peer_harness  # noqa: E402


def make_lock(url, name):
    parts = urllib.parse.urlparse(url)
    lock = redis.Redis(host=parts.hostname, port=parts.port or 6379).lock(name, timeout=30)
    return lock.acquire, lock.release


if __name__ == "__main__":
    peer_harness.run("redis-py", {"lock": make_lock})
