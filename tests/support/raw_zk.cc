#include "raw_zk.h"

#include <cstring>
#include <stdexcept>
#include <utility>

namespace dlock::test {
namespace {

constexpr std::chrono::seconds kConnectTimeout{10};
constexpr int kMaxExpireAttempts = 5;

// Handle-level log sink: keeps the C client's connection chatter (expected in
// fault tests) out of the test output without touching the global log level
// the library under test may rely on.
void discard_log_message(const char* /*message*/) {}

[[noreturn]] void throw_zk_error(const char* operation, const std::string& path, int rc) {
  throw std::runtime_error(std::string("RawZk: ") + operation + "(" + path +
                           ") failed: " + zerror(rc) + " (" + std::to_string(rc) + ")");
}

}  // namespace

RawZk::RawZk(const std::string& connect, int session_timeout_ms) {
  open(connect, session_timeout_ms, nullptr);
}

RawZk::RawZk(const std::string& connect, int session_timeout_ms,
             const clientid_t& existing_session) {
  open(connect, session_timeout_ms, &existing_session);
}

RawZk::~RawZk() {
  if (handle_ != nullptr) zookeeper_close(handle_);
}

void RawZk::open(const std::string& connect, int session_timeout_ms, const clientid_t* session) {
  handle_ = zookeeper_init2(connect.c_str(), &RawZk::on_session_event, session_timeout_ms, session,
                            this, 0, &discard_log_message);
  if (handle_ == nullptr) {
    throw std::runtime_error("RawZk: zookeeper_init2(" + connect +
                             ") failed: " + std::strerror(errno));
  }
  bool connected;
  {
    std::unique_lock lock(mutex_);
    // Also stop on expiry: resuming a dead session never connects.
    connected = state_changed_.wait_for(lock, kConnectTimeout, [this] {
      return connected_count_ > 0 || last_session_state_ == ZOO_EXPIRED_SESSION_STATE ||
             last_session_state_ == ZOO_AUTH_FAILED_STATE;
    });
    connected = connected && connected_count_ > 0;
  }
  if (!connected) {
    zookeeper_close(handle_);
    handle_ = nullptr;
    throw std::runtime_error("RawZk: could not establish a session with " + connect);
  }
}

void RawZk::on_session_event(zhandle_t* /*handle*/, int type, int state, const char* /*path*/,
                             void* context) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* self = static_cast<RawZk*>(context);
  {
    std::lock_guard lock(self->mutex_);
    self->last_session_state_ = state;
    if (state == ZOO_CONNECTED_STATE) ++self->connected_count_;
  }
  self->state_changed_.notify_all();
}

std::vector<std::string> RawZk::children(const std::string& path) {
  String_vector names{};
  const int rc = zoo_get_children(handle_, path.c_str(), 0, &names);
  if (rc == ZNONODE) return {};
  if (rc != ZOK) throw_zk_error("children", path, rc);
  std::vector<std::string> result(names.data, names.data + names.count);
  deallocate_String_vector(&names);
  return result;
}

bool RawZk::exists(const std::string& path) {
  Stat stat{};
  const int rc = zoo_exists(handle_, path.c_str(), 0, &stat);
  if (rc == ZNONODE) return false;
  if (rc != ZOK) throw_zk_error("exists", path, rc);
  return true;
}

std::optional<std::string> RawZk::get(const std::string& path) {
  // Grows until the data fits: the C client truncates silently otherwise.
  std::string buffer(4096, '\0');
  for (;;) {
    int length = static_cast<int>(buffer.size());
    Stat stat{};
    const int rc = zoo_get(handle_, path.c_str(), 0, buffer.data(), &length, &stat);
    if (rc == ZNONODE) return std::nullopt;
    if (rc != ZOK) throw_zk_error("get", path, rc);
    if (stat.dataLength <= static_cast<int>(buffer.size())) {
      buffer.resize(length < 0 ? 0 : length);  // -1 for a node with null data
      return buffer;
    }
    buffer.assign(stat.dataLength, '\0');
  }
}

int64_t RawZk::ephemeral_owner(const std::string& path) {
  Stat stat{};
  const int rc = zoo_exists(handle_, path.c_str(), 0, &stat);
  if (rc != ZOK) throw_zk_error("ephemeral_owner", path, rc);
  return stat.ephemeralOwner;
}

int64_t RawZk::czxid(const std::string& path) {
  Stat stat{};
  const int rc = zoo_exists(handle_, path.c_str(), 0, &stat);
  if (rc != ZOK) throw_zk_error("czxid", path, rc);
  return stat.czxid;
}

int RawZk::try_create(const std::string& path, std::string_view data, int flags,
                      std::string* created_path) {
  // Room for the path plus a 10-digit sequence suffix.
  std::string created(path.size() + 16, '\0');
  Stat stat{};
  const int rc = zoo_create2(handle_, path.c_str(), data.data(), static_cast<int>(data.size()),
                             &ZOO_OPEN_ACL_UNSAFE, flags, created.data(),
                             static_cast<int>(created.size()), &stat);
  if (rc == ZOK && created_path != nullptr) {
    created.resize(std::strlen(created.c_str()));
    *created_path = std::move(created);
  }
  return rc;
}

std::string RawZk::create(const std::string& path, std::string_view data, int flags) {
  std::string created;
  const int rc = try_create(path, data, flags, &created);
  if (rc != ZOK) throw_zk_error("create", path, rc);
  return created;
}

void RawZk::create_persistent(const std::string& path) {
  const int rc = try_create(path, {}, 0);
  if (rc != ZOK && rc != ZNODEEXISTS) throw_zk_error("create_persistent", path, rc);
}

void RawZk::remove(const std::string& path) {
  const int rc = zoo_delete(handle_, path.c_str(), -1);
  if (rc != ZOK && rc != ZNONODE) throw_zk_error("remove", path, rc);
}

int64_t RawZk::session_id() const { return zoo_client_id(handle_)->client_id; }

clientid_t RawZk::client_id() const { return *zoo_client_id(handle_); }

int RawZk::state() const { return zoo_state(handle_); }

bool RawZk::wait_for_state(int state, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return state_changed_.wait_for(
      lock, timeout, [&] { return last_session_state_ == state || zoo_state(handle_) == state; });
}

int RawZk::connected_count() const {
  std::lock_guard lock(mutex_);
  return connected_count_;
}

bool RawZk::wait_connected_count_at_least(int count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return state_changed_.wait_for(lock, timeout, [&] { return connected_count_ >= count; });
}

namespace {

// Where a resumed session ended up, reported by its watcher.
struct SessionOutcome {
  std::mutex mutex;
  std::condition_variable changed;
  int state = 0;
};

void record_session_outcome(zhandle_t* /*handle*/, int type, int state, const char* /*path*/,
                            void* context) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* outcome = static_cast<SessionOutcome*>(context);
  {
    std::lock_guard lock(outcome->mutex);
    outcome->state = state;
  }
  outcome->changed.notify_all();
}

// Opens a second handle on `session` and closes it again. Returns
// ZOO_CONNECTED_STATE if the session was alive (the close then sent
// CloseSession for it), ZOO_EXPIRED_SESSION_STATE if the server reports it
// gone, or 0 if neither happened in time.
int resume_and_close(const std::string& direct_connect, const clientid_t& session, int timeout_ms) {
  SessionOutcome outcome;
  zhandle_t* clone = zookeeper_init2(direct_connect.c_str(), &record_session_outcome, timeout_ms,
                                     &session, &outcome, 0, &discard_log_message);
  if (clone == nullptr) return 0;
  int final_state;
  {
    std::unique_lock lock(outcome.mutex);
    outcome.changed.wait_for(lock, kConnectTimeout, [&] {
      return outcome.state == ZOO_CONNECTED_STATE || outcome.state == ZOO_EXPIRED_SESSION_STATE;
    });
    final_state = outcome.state;
  }
  // Joins the client's threads, so `outcome` is not touched after this.
  zookeeper_close(clone);
  return final_state == ZOO_CONNECTED_STATE || final_state == ZOO_EXPIRED_SESSION_STATE
             ? final_state
             : 0;
}

}  // namespace

void expire_session(const std::string& direct_connect, const clientid_t& session, int timeout_ms) {
  // The first round normally closes the session, the second confirms that the
  // server considers it expired. More rounds only if something raced.
  for (int attempt = 0; attempt < kMaxExpireAttempts; ++attempt) {
    if (resume_and_close(direct_connect, session, timeout_ms) == ZOO_EXPIRED_SESSION_STATE) {
      return;
    }
  }
  throw std::runtime_error("expire_session: session " + std::to_string(session.client_id) +
                           " still alive after " + std::to_string(kMaxExpireAttempts) +
                           " attempts");
}

void expire_session(const std::string& direct_connect, int64_t session_id, const char passwd[16],
                    int timeout_ms) {
  clientid_t session{};
  session.client_id = session_id;
  std::memcpy(session.passwd, passwd, sizeof(session.passwd));
  expire_session(direct_connect, session, timeout_ms);
}

}  // namespace dlock::test
