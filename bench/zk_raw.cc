#include "zk_raw.h"

#include <chrono>
#include <stdexcept>

namespace bench {

namespace {
constexpr int kSessionTimeoutMs = 30'000;
constexpr auto kConnectTimeout = std::chrono::seconds(30);
}  // namespace

void check_rc(int rc, const std::string& what) {
  if (rc != ZOK) throw std::runtime_error(what + ": " + zerror(rc));
}

RawSession::RawSession(const std::string& hosts) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);  // the client logs to stderr; keep it quiet
  handle_ = zookeeper_init(hosts.c_str(), &RawSession::on_session_event, kSessionTimeoutMs, nullptr,
                           this, 0);
  if (handle_ == nullptr) throw std::runtime_error("zookeeper_init failed for " + hosts);
  std::unique_lock lock(mu_);
  if (!connected_cv_.wait_for(lock, kConnectTimeout, [this] { return connected_; })) {
    lock.unlock();
    zookeeper_close(handle_);
    throw std::runtime_error("no session with " + hosts);
  }
}

RawSession::~RawSession() { zookeeper_close(handle_); }

void RawSession::on_session_event(zhandle_t*, int type, int state, const char*, void* context) {
  if (type != ZOO_SESSION_EVENT || state != ZOO_CONNECTED_STATE) return;
  auto* self = static_cast<RawSession*>(context);
  std::lock_guard lock(self->mu_);
  self->connected_ = true;
  self->connected_cv_.notify_all();
}

void RawSession::create_path(const std::string& path) {
  for (std::size_t slash = 1; slash != std::string::npos;) {
    slash = path.find('/', slash + 1);
    const std::string prefix = path.substr(0, slash);
    const int rc = zoo_create(handle_, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                              ZOO_PERSISTENT, nullptr, 0);
    if (rc != ZNODEEXISTS) check_rc(rc, "create " + prefix);
  }
}

std::string RawSession::create(const std::string& path, int flags) {
  std::string created(path.size() + 16, '\0');
  check_rc(zoo_create(handle_, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, flags,
                      created.data(), static_cast<int>(created.size())),
           "create " + path);
  created.resize(created.find('\0'));
  return created;
}

void RawSession::sync_barrier() {
  Stat stat{};
  check_rc(zoo_exists(handle_, "/", 0, &stat), "exists /");
}

std::uint64_t WatchSignal::generation() {
  std::lock_guard lock(mu_);
  return generation_;
}

void WatchSignal::wait_past(std::uint64_t generation) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return generation_ > generation; });
}

void WatchSignal::on_event(zhandle_t*, int type, int, const char*, void* context) {
  if (type == ZOO_SESSION_EVENT) return;
  auto* self = static_cast<WatchSignal*>(context);
  self->notifications_.fetch_add(1);
  std::lock_guard lock(self->mu_);
  ++self->generation_;
  self->cv_.notify_all();
}

long sequence_of(const std::string& name) {
  const auto dash = name.rfind('-');
  return std::stol(name.substr(dash == std::string::npos ? 0 : dash + 1));
}

void CompletionCounter::add(long n) {
  std::lock_guard lock(mu_);
  pending_ += n;
}

void CompletionCounter::done(int rc) {
  std::lock_guard lock(mu_);
  if (rc != ZOK && first_error_ == ZOK) first_error_ = rc;
  if (--pending_ == 0) cv_.notify_all();
}

void CompletionCounter::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return pending_ == 0; });
  check_rc(first_error_, "asynchronous request");
}

}  // namespace bench
