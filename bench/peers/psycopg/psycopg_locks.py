#!/usr/bin/python3
"""The two PostgreSQL locks users write by hand with psycopg (Debian's python3-psycopg), under
the scenarios dlock-bench runs on PostgreSQL.

  psycopg_locks.py --design table|advisory --backend postgresql://USER:PASS@HOST:PORT/DB
                   --scenario uncontended|contended --iterations K [--clients N]

table:    the seed article's lock table (peer_harness.seed_table_lock): INSERT the name, a
          primary key; on failure sleep 10 ms and try again; release = DELETE.
advisory: pg_advisory_lock(hashtext(name)), which the server queues; pg_advisory_unlock.
Each client has its own connection, in autocommit. Prints one JSON line (peer_harness.py).
"""
import os
import sys

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import peer_harness  # noqa: E402


def table_lock(url, name):
    db = psycopg.connect(url, autocommit=True)
    db.execute("CREATE TABLE IF NOT EXISTS seed_lock (name text PRIMARY KEY, owner int)")
    return peer_harness.seed_table_lock(
        db.execute, lambda error: isinstance(error, psycopg.errors.UniqueViolation), name)


def advisory_lock(url, name):
    db = psycopg.connect(url, autocommit=True)
    return (lambda: db.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,)),
            lambda: db.execute("SELECT pg_advisory_unlock(hashtext(%s))", (name,)))


if __name__ == "__main__":
    peer_harness.run("psycopg", {"table": table_lock, "advisory": advisory_lock})
