#!/usr/bin/python3
"""The two MySQL / MariaDB locks users write by hand with PyMySQL (Debian's python3-pymysql),
under the scenarios dlock-bench runs on MySQL.

  pymysql_locks.py --design table|row|get_lock --backend mysql://USER:PASS@HOST:PORT/DB
                   --scenario uncontended|contended --iterations K [--clients N]

table:    the seed article's lock table (peer_harness.seed_table_lock) with ENGINE=InnoDB and a
          unique key on the name: INSERT; on a duplicate key (or the deadlock InnoDB reports
          when many such INSERTs collide) sleep 10 ms and try again; release = DELETE.
row:      the seed article's second lock: a row per name (unique key), locked with
          SELECT ... FOR UPDATE inside a transaction held open while holding; COMMIT releases.
get_lock: GET_LOCK(name, 30), which the server queues; RELEASE_LOCK(name).
Each client has its own connection, in autocommit (the row design opens its transactions). Prints one JSON line (peer_harness.py).
"""
import os
import sys
import urllib.parse

import pymysql

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import peer_harness  # noqa: E402


def connect(url):
    parts = urllib.parse.urlparse(url)
    return pymysql.connect(host=parts.hostname, port=parts.port or 3306, user=parts.username,
                           password=parts.password or "", database=parts.path.lstrip("/"),
                           autocommit=True)


# A duplicate key, or the deadlock InnoDB reports when many INSERTs of one key collide (1213):
# either way the lock is taken, and the seed's reader tries again.
def busy(error):
    return isinstance(error, pymysql.err.IntegrityError) or (
        isinstance(error, pymysql.err.OperationalError) and error.args[0] == 1213)


def table_lock(url, name):
    db = connect(url).cursor()
    db.execute("CREATE TABLE IF NOT EXISTS seed_lock (name VARCHAR(255) NOT NULL, owner INT, "
               "UNIQUE KEY (name)) ENGINE=InnoDB")
    return peer_harness.seed_table_lock(db.execute, busy, name)


def row_lock(url, name):
    db = connect(url).cursor()
    db.execute("CREATE TABLE IF NOT EXISTS seed_rows (name VARCHAR(255) NOT NULL PRIMARY KEY) "
               "ENGINE=InnoDB")
    db.execute("INSERT IGNORE INTO seed_rows (name) VALUES (%s)", (name,))

    def acquire():
        db.execute("START TRANSACTION")
        db.execute("SELECT name FROM seed_rows WHERE name = %s FOR UPDATE", (name,))

    return acquire, lambda: db.execute("COMMIT")


def get_lock(url, name):
    db = connect(url).cursor()

    def acquire():
        db.execute("SELECT GET_LOCK(%s, 30)", (name,))
        if db.fetchone()[0] != 1:  # 0: timed out; NULL: an error
            raise RuntimeError("GET_LOCK(%r, 30) did not grant the lock" % name)

    return acquire, lambda: db.execute("SELECT RELEASE_LOCK(%s)", (name,))


if __name__ == "__main__":
    peer_harness.run("pymysql", {"table": table_lock, "row": row_lock, "get_lock": get_lock})
