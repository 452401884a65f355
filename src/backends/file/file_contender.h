// One contender of the file backend: tries the flock without blocking, and polls with a
// bounded backoff on the backend's executor while it has to wait.
//
// Why polling, not a thread blocked in flock(LOCK_EX): a blocked flock can be interrupted only
// by a signal, and a library must not take a signal number from its host program; a thread per
// waiter would also cost more than a poll. Polling starts at 1 ms and backs off to 20 ms, so a
// hand-off takes at most about 20 ms and a waiter costs some 50 cheap system calls a second.
// Deadlines and cancellation are exact: the next poll is never later than the deadline, and a
// stop request polls at once.
#ifndef DLOCK_SRC_BACKENDS_FILE_FILE_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_FILE_FILE_CONTENDER_H_

#include <memory>
#include <string>

#include "core/contender.h"
#include "core/executor.h"
#include "posix.h"

namespace dlock::file_backend {

// Where and what a contender locks.
struct Site {
  std::string dir;   // the lock's directory (lock_dir.h)
  std::string base;  // what of `dir` must exist; the rest is made (make_directories())
  Modes modes;
  ContenderSpec spec;
  std::string label;  // goes into the holder and waiter records
  std::shared_ptr<detail::Executor> executor;
};

std::unique_ptr<detail::Contender> make_file_contender(Site site);

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_FILE_CONTENDER_H_
