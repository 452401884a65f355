// The lock designs dlock-bench can measure (--strategy).
#ifndef DLOCK_BENCH_STRATEGIES_H_
#define DLOCK_BENCH_STRATEGIES_H_

#include <string>

#include "bench_support.h"
#include "contention.h"

namespace bench {

// dlock::Mutex and dlock::SharedMutex, one backend per client: a dlock::zk::Session, or
// dlock::open(--backend).
Strategy dlock_strategy();
// The same, each client's tickets run as a chain of async_acquire callbacks on the library's
// threads, no thread of the client's own waiting in lock() (contention.h).
Strategy dlock_async_strategy();
// many-locks with dlock: M Mutex handles on ONE session, driven by async_acquire.
JsonLine run_many_locks_dlock(const Args& args, const std::string& base);

// The seeds' simple lock: everyone creates <lock>/x (EPHEMERAL); losers watch it with
// `exists` and all retry when it goes (non-fair, wakes every waiter: the herd effect).
Strategy simple_strategy();
// The seeds' read-write lock: sequential read-/write- nodes, and every waiter watches the
// parent's children and re-evaluates on every change (wakes every waiter on every change).
Strategy parent_rw_strategy();
// The seed's Redis lock (--backend redis://host:port): SET NX PX, sleep 100 ms and retry,
// Lua compare-and-delete release (strategy_seed_redis.cc). Only with DLOCK_WITH_REDIS.
Strategy seed_redis_strategy();

// The seed's database locks on PostgreSQL (--backend postgres://...; strategy_pg_seeds.cc):
// the unique-key lock table with a 10 ms retry loop, and SELECT ... FOR UPDATE in an open
// transaction. Built with DLOCK_WITH_POSTGRES.
Strategy pg_table_strategy();
Strategy pg_row_strategy();

}  // namespace bench

#endif  // DLOCK_BENCH_STRATEGIES_H_
