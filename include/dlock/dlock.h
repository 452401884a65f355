// dlock: distributed locks. Include this for the whole public API.
#ifndef DLOCK_DLOCK_H_
#define DLOCK_DLOCK_H_

// The locks are meant for the standard guards (std::lock_guard, std::unique_lock,
// std::scoped_lock, std::shared_lock): their headers come with the API.
#include <mutex>
#include <shared_mutex>

#include <dlock/backend.h>
#include <dlock/basic_lock.h>
#include <dlock/config.h>
#include <dlock/error.h>
#include <dlock/lease.h>
#include <dlock/lock_path.h>
#include <dlock/multi_lock.h>
#include <dlock/mutex.h>
#include <dlock/open.h>
#include <dlock/semaphore.h>
#include <dlock/shared_mutex.h>
#include <dlock/version.h>

// The backends' own headers, of those built in (dlock/config.h).
#if DLOCK_WITH_FILE
#include <dlock/file.h>
#endif
#if DLOCK_WITH_MYSQL
#include <dlock/mysql.h>
#endif
#if DLOCK_WITH_POSTGRES
#include <dlock/postgres.h>
#endif
#if DLOCK_WITH_ZOOKEEPER
#include <dlock/zk/session.h>
#endif

#endif  // DLOCK_DLOCK_H_
