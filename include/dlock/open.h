// dlock::open: a Backend from a URL, so that programs and the dlock command name where locks
// live in one string (a flag, an environment variable, a config file).
//
//   auto backend = dlock::open("zk://zk1:2181,zk2:2181/myapp?session_timeout=10s");
//   auto local = dlock::open("file:");   // this host only, no server
//   dlock::Mutex job(backend, "/jobs/nightly");
#ifndef DLOCK_OPEN_H_
#define DLOCK_OPEN_H_

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include <dlock/backend.h>
#include <dlock/export.h>

namespace dlock {

// Opens the backend named by `url`:
//
//   zk://[user[:password]@]host:port[,host:port...][/chroot][?session_timeout=D&connect_timeout=D]
//       a zk::Session, connected before open() returns. user:password adds digest credentials
//       (the password may also come apart, OpenOptions::password); a chroot that does not exist
//       is created on first use, as Curator creates its namespace. D is a duration as
//       parse_duration() reads it.
//   file:                  the local file backend in the per-user directory (file.h)
//   file:///absolute/dir   the local file backend in that directory (created 0700 if missing)
//   redis://[[user]:password@]host[:port][/db][?ttl=D&connect_timeout=D]
//   rediss://...[&tls_ca=FILE]
//       a Redis server (docs/redis.md), connected before open() returns; every lock is a lease
//       of `ttl` (default 10s, at least 100ms) renewed while held. ":password@" alone
//       authenticates the default user. rediss:// is TLS, the server's certificate checked
//       against the system's store or the PEM file FILE.
//   redlock://[[user]:password@]host[:port],host[:port],host[:port][,...][/db][?ttl=D&...]
//       Redlock over three or more independent Redis masters (docs/redis.md), quorum N/2+1; a
//       quorum must answer before open() returns. Exclusive locks only; Lease::token() is 0.
//   postgres://[user[:password]@][host][:port][/dbname][?param=value&...]   (or postgresql://)
//   postgres:[key=value ...]
//       a postgres::Backend (postgres.h): a libpq URI, or a libpq key=value string, or nothing
//       (libpq's PG* variables). libpq reads every parameter but schema=, heartbeat=, mode= and
//       ttl= (sslmode=, connect_timeout=, ...). mode=advisory (default: session advisory locks),
//       mode=row (SELECT ... FOR UPDATE in a held transaction) or mode=table (a row per lock with
//       an expiry of ttl, default 10s, at least 100ms, renewed while held; readers refused).
//       Connected before open() returns.
//   mysql://user[:password]@host[:port]/dbname[?ssl-mode=M&ssl-ca=FILE&connect_timeout=D&heartbeat=D
//                                              &mode=get_lock|table&ttl=D]
//       (also mariadb://) a mysql::Backend (mysql.h): MySQL/MariaDB named locks (mode=get_lock,
//       the default) or the lock table (mode=table, as for postgres://), dlock's tables in
//       dbname. M as MySQL's --ssl-mode (DISABLED, PREFERRED, REQUIRED, VERIFY_CA,
//       VERIFY_IDENTITY).
//
// User, password, chroot, directory and option values are percent-decoded ("%40" is '@', "%2F"
// is '/'), so that any password can be written. Messages that quote a URL hide its password.
//
// Throws dlock::Error:
//   invalid_argument  a malformed URL or query, or an unknown scheme (the message names it), an
//                     unknown mode= or a table-mode ttl under 100ms (postgres://, mysql://),
//                     fewer than three masters, one named twice, two that answer as one
//                     server, or one that cannot say which server it is: INFO denied
//                     (redlock://);
//   not_supported     a backend left out of this build;
//   connect_failed, auth_failed, cancelled   zk:// as zk::Session::connect(); redis:// when
//                     no server answers in time (or its certificate is not trusted), when it
//                     refuses the password, when `stop` fires; redlock:// when fewer than a
//                     quorum of masters answer;
//   server_unavailable  redis:// and redlock:// when a server is at its maxclients or loading
//                     its data; postgres:// and mysql:// as their Backend::open();
//   connect_failed, auth_failed, permission_denied, cancelled   postgres:// as
//                     postgres::Backend::open();
//   permission_denied, backend_failure    file: as file::Backend::open().
//   connect_failed, auth_failed, permission_denied, cancelled, backend_failure   mysql:// as
//                     mysql::Backend::open().
DLOCK_EXPORT std::shared_ptr<Backend> open(std::string_view url);

// How open() may wait for a server, and what it may not read from the URL.
struct OpenOptions {
  // Replaces the URL's connect timeout (or the default) when shorter, so that a caller with a
  // deadline does not wait longer than it for a server. Empty: the URL's.
  std::optional<std::chrono::milliseconds> connect_timeout{};
  // Ends a connection attempt early: open() throws dlock::Error(cancelled).
  std::stop_token stop{};
  // The password of the URL's user, given apart from the URL so that it need not appear where
  // `ps` or a shell history shows it: zk://user@host:2181 plus this is zk://user:password@....
  // Replaces a password in the URL. A password for a URL that names no user is refused
  // (invalid_argument); backends without passwords (file:) ignore it.
  std::optional<std::string> password{};
};

// As open(url), waiting as `options` say.
DLOCK_EXPORT std::shared_ptr<Backend> open(std::string_view url, const OpenOptions& options);
// As open(url, {.connect_timeout = connect_timeout}).
DLOCK_EXPORT std::shared_ptr<Backend> open(std::string_view url,
                                           std::chrono::milliseconds connect_timeout);

// Reads a duration: non-negative decimal numbers, each with a unit (ns, us, ms, s, m or min,
// h, d), summed as Go does: "500ms", "30s", "1.5s", "1m30s", "1h", "2d"; a bare number counts
// seconds (as flock(1) reads "-w 2.5"). Rounded up to whole milliseconds, at most about a
// hundred years. Throws dlock::Error(invalid_argument) naming the text otherwise.
DLOCK_EXPORT std::chrono::milliseconds parse_duration(std::string_view text);

}  // namespace dlock

#endif  // DLOCK_OPEN_H_
