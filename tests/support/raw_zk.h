// A small synchronous wrapper over the ZooKeeper C client, for tests that need
// to inspect or tamper with the server independently of the library under test.
#pragma once

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::test {

class RawZk {
 public:
  // `connect` may carry a chroot suffix ("127.0.0.1:2181/some/root"). Blocks
  // until the session is established; throws std::runtime_error after 10 s.
  explicit RawZk(const std::string& connect, int session_timeout_ms = 10000);
  // Resumes an existing session (the C client's clone mechanism). Throws if the
  // session cannot be established, including when it has already expired.
  RawZk(const std::string& connect, int session_timeout_ms, const clientid_t& existing_session);
  ~RawZk();

  RawZk(const RawZk&) = delete;
  RawZk& operator=(const RawZk&) = delete;

  // Child names (not full paths), unsorted; empty if the node does not exist.
  std::vector<std::string> children(const std::string& path);
  bool exists(const std::string& path);
  // std::nullopt if the node does not exist.
  std::optional<std::string> get(const std::string& path);
  // Both throw if the node does not exist. 0 means "not ephemeral".
  int64_t ephemeral_owner(const std::string& path);
  int64_t czxid(const std::string& path);

  // `flags` are the C client's create modes (ZOO_EPHEMERAL, ZOO_SEQUENCE, ...).
  // Returns the created path, which differs from `path` for sequential nodes.
  std::string create(const std::string& path, std::string_view data = {}, int flags = 0);
  // Like create() but returns the C client's error code instead of throwing
  // (uses zoo_create2, i.e. op type 15 on the wire). `created_path` may be null.
  int try_create(const std::string& path, std::string_view data, int flags,
                 std::string* created_path = nullptr);
  // Creates a persistent node; an existing node is fine.
  void create_persistent(const std::string& path);
  // Deletes a node regardless of version; a missing node is fine.
  void remove(const std::string& path);

  int64_t session_id() const;
  clientid_t client_id() const;
  // zoo_state(): ZOO_CONNECTED_STATE, ZOO_CONNECTING_STATE,
  // ZOO_EXPIRED_SESSION_STATE, ...
  int state() const;
  // Waits for a session event reporting `state` (or for the current state to be
  // it already). Returns false on timeout.
  bool wait_for_state(int state, std::chrono::milliseconds timeout);
  // How many times the session reached ZOO_CONNECTED_STATE: grows by one on
  // every reconnect, so tests can wait for a reconnect after a fault.
  int connected_count() const;
  bool wait_connected_count_at_least(int count, std::chrono::milliseconds timeout);

  // For calls the wrapper does not cover. Owned by this object.
  zhandle_t* handle() const { return handle_; }

 private:
  static void on_session_event(zhandle_t* handle, int type, int state, const char* path,
                               void* context);
  void open(const std::string& connect, int session_timeout_ms, const clientid_t* session);

  zhandle_t* handle_ = nullptr;
  mutable std::mutex mutex_;
  std::condition_variable state_changed_;
  int last_session_state_ = 0;  // guarded by mutex_
  int connected_count_ = 0;     // guarded by mutex_
};

// Expires `session_id` on the server using the clone trick: a second handle with
// the same session id and password connects directly to the server
// (`direct_connect`, no proxy) and closes, which sends CloseSession for the
// shared session. Repeats (up to 5 times) until a further clone attempt is told
// the session has expired, so on return the session is verifiably gone; throws
// std::runtime_error otherwise.
//
// Reliable only if the original client cannot reconnect meanwhile: put it
// behind a FaultProxy in blackhole() mode first. Otherwise the original client
// may reclaim the connection while the clone is connecting.
void expire_session(const std::string& direct_connect, int64_t session_id, const char passwd[16],
                    int timeout_ms);
void expire_session(const std::string& direct_connect, const clientid_t& session, int timeout_ms);

}  // namespace dlock::test
