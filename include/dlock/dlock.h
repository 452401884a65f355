// dlock: distributed locks. Include this for the whole public API.
#ifndef DLOCK_DLOCK_H_
#define DLOCK_DLOCK_H_

// The locks are meant for the standard guards (std::lock_guard, std::unique_lock,
// std::scoped_lock, std::shared_lock): their headers come with the API.
#include <mutex>
#include <shared_mutex>

#include <dlock/backend.h>
#include <dlock/basic_lock.h>
#include <dlock/error.h>
#include <dlock/file.h>
#include <dlock/lease.h>
#include <dlock/lock_path.h>
#include <dlock/multi_lock.h>
#include <dlock/mutex.h>
#include <dlock/mysql.h>
#include <dlock/open.h>
#include <dlock/postgres.h>
#include <dlock/semaphore.h>
#include <dlock/shared_mutex.h>
#include <dlock/version.h>
#include <dlock/zk/session.h>

#endif  // DLOCK_DLOCK_H_
