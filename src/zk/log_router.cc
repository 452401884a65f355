#include "log_router.h"

#include <zookeeper/zookeeper.h>

#include <map>
#include <mutex>
#include <utility>

namespace dlock::zk::log_router {

namespace {

struct Entry {
  Sink sink;
  LogLevel level;
};

struct Registry {
  std::mutex mu;
  std::map<std::uint64_t, Entry> sinks;
  std::uint64_t next_id = 1;

  // The C client's process-wide level: the most verbose any sink asked for, or nothing.
  void apply_level() {
    int level = 0;
    for (const auto& [id, entry] : sinks) level = std::max(level, static_cast<int>(entry.level));
    zoo_set_debug_level(static_cast<ZooLogLevel>(level));
  }
};

Registry& registry() {
  static Registry* r = [] {
    // Silence the client before any handle exists: its default prints to stderr.
    zoo_set_debug_level(static_cast<ZooLogLevel>(0));
    return new Registry;
  }();
  return *r;
}

LogLevel level_of(std::string_view message) {
  if (message.find("ZOO_ERROR@") != std::string_view::npos) return LogLevel::error;
  if (message.find("ZOO_WARN@") != std::string_view::npos) return LogLevel::warn;
  if (message.find("ZOO_INFO@") != std::string_view::npos) return LogLevel::info;
  return LogLevel::debug;
}

}  // namespace

std::uint64_t add(Sink sink, LogLevel level) {
  Registry& r = registry();
  if (!sink) return 0;
  std::lock_guard lock(r.mu);
  const std::uint64_t id = r.next_id++;
  r.sinks.emplace(id, Entry{std::move(sink), level});
  r.apply_level();
  return id;
}

void remove(std::uint64_t id) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.sinks.erase(id) > 0) r.apply_level();
}

void forward(const char* message) {
  if (message == nullptr) return;
  const std::string_view text(message);
  const LogLevel level = level_of(text);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& [id, entry] : r.sinks) {
    if (static_cast<int>(level) <= static_cast<int>(entry.level)) entry.sink(level, text);
  }
}

}  // namespace dlock::zk::log_router
