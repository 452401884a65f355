// The connection attempts of one SQL backend still under way, each with the way to abandon it,
// so that closing the backend ends them. An attempt waiting on its socket is kept by that wait,
// and keeps the backend's executor and its thread: left alone, the thread outlived the closed
// backend, and a process that exited meanwhile ran OpenSSL's exit cleanup under the attempt's
// TLS handshake (a crash at exit, found by a hostile probe).
#ifndef DLOCK_SRC_BACKENDS_SQL_CONNECT_ATTEMPTS_H_
#define DLOCK_SRC_BACKENDS_SQL_CONNECT_ATTEMPTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <system_error>
#include <utility>

namespace dlock::sql {

// Ends an attempt at once, unless it has ended: its callback reports `error` and `why`.
using Abandon = std::function<void(std::error_code error, const std::string& why)>;

// Thread safety: every member must be called on the backend's executor.
class ConnectAttempts {
 public:
  // The id of the next attempt, for its callback to call ended() with.
  std::uint64_t next_id() { return next_id_++; }
  void started(std::uint64_t id, Abandon abandon) { attempts_.emplace(id, std::move(abandon)); }
  void ended(std::uint64_t id) { attempts_.erase(id); }

  // Abandons every attempt under way. Their callbacks run inside this call.
  void abandon_all(std::error_code error, const std::string& why) {
    for (auto& [id, abandon] : std::exchange(attempts_, {})) abandon(error, why);
  }

 private:
  std::map<std::uint64_t, Abandon> attempts_;
  std::uint64_t next_id_ = 0;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_CONNECT_ATTEMPTS_H_
