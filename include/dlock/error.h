// Errors of dlock: one std::error_code category for the library's own conditions.
//
// Every failure the library reports is a std::error_code. Conditions of dlock itself use
// dlock::errc in dlock::error_category(); a backend's raw codes (a ZooKeeper return code, say)
// keep a category of their own and are wrapped in the message of the dlock::errc they map to.
// The blocking calls throw dlock::Error, a std::system_error carrying that code and a message
// that names the path, address or child concerned.
#ifndef DLOCK_ERROR_H_
#define DLOCK_ERROR_H_

#include <string>
#include <system_error>

#include <dlock/export.h>

namespace dlock {

enum class errc {
  // The lock path is not a valid absolute path: empty, no leading '/', a trailing '/', an empty
  // or "." / ".." component, or a character ZooKeeper refuses (refused on every backend, so
  // that a name means one lock wherever it is used).
  invalid_path = 1,
  // (ZooKeeper) The lock's node holds a child dlock cannot order in its queue: one whose
  // sequence number is negative (the server's counter passed 2^31) or cannot be parsed,
  // another library's lock node (default kazoo's), or the node of a lock named under this one
  // ("/a/b" under "/a": a name cannot be both a lock and a lock's parent while both are used).
  // dlock refuses to guess an order that other clients might not share; the message names
  // the child.
  unorderable_path,
  // The handle already holds the lock or is acquiring it. A handle is one contender.
  already_locked,
  // token(), lost() or tokens() on a handle that does not hold the lock (unlock() of a lock
  // not held does nothing), or SharedMutex::downgrade() without the write lock.
  not_locked,
  // The deadline passed before the lock was acquired.
  timed_out,
  // The caller's std::stop_token was triggered before the lock was acquired.
  cancelled,
  // The session is closed (Session::close() or its destruction), or the call came after it.
  session_closed,
  // The server expired the session: every lock held on it is lost.
  session_expired,
  // The connection to the server broke (a SQL backend: its locks on it are gone), or was down
  // so long that the server may already have expired the session (ZooKeeper); the library
  // gave it up and connects again for later calls.
  connection_lost,
  // No server could be reached within the connect deadline; the message names the addresses.
  connect_failed,
  // The server refused the credentials given (digest auth).
  auth_failed,
  // The server refused the operation: no permission by the node's ACL.
  permission_denied,
  // The backend cannot offer this primitive honestly.
  not_supported,
  // An argument is invalid (a malformed connect string, say); the message says which.
  invalid_argument,
  // The server answered with an error the library has no meaning for; the message carries it.
  // Also a defect of the library itself, which the message says: a backend that ended an
  // acquisition without answering it (the call fails rather than waiting forever).
  backend_failure,
  // The path is in use as another kind of lock (a semaphore where a mutex or read-write lock
  // is asked for, or the other way round; on ZooKeeper also a Mutex beside a SharedMutex), or
  // as a semaphore with other permits. The message names what holds the path. Holders of
  // different kinds never share a path; the kind can change once nobody contends for it.
  lock_mismatch,
  // A blocking call (lock(), try_lock(), acquire(), downgrade(), status(), list()) made from a
  // callback, on one of the library's threads: on its own backend's it would wait for itself
  // forever, on another's it could wait in a cycle, and either way it stalls every lease of
  // the callback's backend. Call async_acquire() there, or make the call from a thread the
  // callback does not wait for.
  called_from_callback,
  // The server answered but takes no more connections now: its connection limit is reached
  // (PostgreSQL's "too many connections" or "too many clients", MySQL's errors 1040, 1203 and
  // 1226, Redis's maxclients), or it is starting up, shutting down or loading its data. Nothing
  // was taken; the same call a little later may succeed, where connect_failed's wrong host or
  // port would not. The message carries the server's words.
  server_unavailable,
  // (PostgreSQL, MySQL) Another session cancelled a statement of dlock's: an administrator or
  // a long-query killer (pg_cancel_backend(), KILL QUERY), mostly that of a wait, which runs
  // long. An acquisition so ended took nothing, and what other calls hold stays held; the
  // same call again waits again, at the end of the queue. The message carries the server's
  // words.
  interrupted,
};

DLOCK_EXPORT const std::error_category& error_category() noexcept;
DLOCK_EXPORT std::error_code make_error_code(errc e) noexcept;

// The exception thrown by the blocking calls. what() is "<context>: <message of the code>".
class DLOCK_EXPORT Error : public std::system_error {
 public:
  Error(std::error_code code, const std::string& context) : std::system_error(code, context) {}
  Error(errc code, const std::string& context) : Error(make_error_code(code), context) {}

  // The context the error was made with: what() without ": <message of the code>", for a
  // message that says what went wrong in its own words, or an error that becomes part of
  // another's message (which adds its own code's message). Empty for an error made with none.
  std::string context() const;
};

}  // namespace dlock

template <>
struct std::is_error_code_enum<dlock::errc> : std::true_type {};

#endif  // DLOCK_ERROR_H_
