#include "lock_listing.h"

#include <algorithm>
#include <future>

#include <dlock/error.h>
#include <dlock/file.h>
#include <dlock/open.h>

#include "executor.h"
#include "lock_path.h"
#include "zk/client.h"
#include "zk/code.h"

namespace dlock::cli {

namespace {

// A child name a lock contender makes: dlock's and Curator's protected names, Curator's
// unprotected ones, read-write and semaphore nodes.
bool is_contender(std::string_view name) {
  return name.starts_with("_c_") || name.find("lock-") != std::string_view::npos ||
         name.find("__READ__") != std::string_view::npos ||
         name.find("__WRIT__") != std::string_view::npos;
}

class ZkWalker {
 public:
  ZkWalker(std::shared_ptr<zk::Client> client, Clock::time_point deadline)
      : client_(std::move(client)), deadline_(deadline) {}

  void walk(const std::string& path, std::vector<std::string>& locks) {
    const std::vector<std::string> children = children_of(path);
    if (std::any_of(children.begin(), children.end(), is_contender)) {
      locks.push_back(path);
      return;
    }
    for (const std::string& child : children) {
      if (path == "/" && child == "zookeeper") continue;
      walk(path == "/" ? "/" + child : path + "/" + child, locks);
    }
  }

 private:
  std::vector<std::string> children_of(const std::string& path) {
    auto promise =
        std::make_shared<std::promise<std::pair<std::error_code, std::vector<std::string>>>>();
    auto result = promise->get_future();
    client_->get_children(
        path, [promise](std::error_code ec, std::vector<std::string> children, const zk::Stat&) {
          promise->set_value({ec, std::move(children)});
        });
    if (result.wait_until(deadline_) != std::future_status::ready) {
      throw Error(errc::timed_out, "listing " + path);
    }
    auto [ec, children] = result.get();
    if (ec == zk::Code::no_node) return {};
    if (ec) throw Error(zk::to_dlock_error(ec), "listing " + path + ": " + ec.message());
    return children;
  }

  std::shared_ptr<zk::Client> client_;
  Clock::time_point deadline_;
};

std::vector<std::string> list_zk(std::string_view url, std::string_view prefix,
                                 Clock::time_point deadline) {
  const zk::Options options = parse_zk_url(url);
  auto executor = std::make_shared<detail::Executor>();
  auto client = zk::Client::open({.hosts = options.hosts,
                                  .chroot = options.chroot,
                                  .session_timeout = options.session_timeout,
                                  .digest_auth = options.digest_auth},
                                 executor, [](zk::ConnectionEvent) {});
  struct Closer {
    std::shared_ptr<zk::Client> client;
    ~Closer() { client->close(make_error_code(errc::session_closed)); }
  } closer{client};
  auto connected = std::make_shared<std::promise<std::error_code>>();
  auto ready = connected->get_future();
  client->when_connected([connected](std::error_code ec) { connected->set_value(ec); });
  const auto connect_deadline = std::min(deadline, Clock::now() + options.connect_timeout);
  if (ready.wait_until(connect_deadline) != std::future_status::ready) {
    throw Error(errc::connect_failed, "no ZooKeeper server answered at " + options.hosts);
  }
  if (const std::error_code ec = ready.get()) throw Error(zk::to_dlock_error(ec), options.hosts);
  std::vector<std::string> locks;
  ZkWalker(client, deadline).walk(std::string(prefix), locks);
  return locks;
}

}  // namespace

std::vector<std::string> list_locks(Backend& backend, std::string_view url, std::string_view prefix,
                                    Clock::time_point deadline) {
  if (prefix != "/") detail::check_lock_path(prefix);
  if (auto* files = dynamic_cast<file::Backend*>(&backend)) return files->list(prefix);
  if (backend.scheme() == "zk") {
    std::vector<std::string> locks = list_zk(url, prefix, deadline);
    std::sort(locks.begin(), locks.end());
    return locks;
  }
  throw Error(errc::not_supported, "dlock list on " + std::string(backend.scheme()) + "://");
}

}  // namespace dlock::cli
