#include "report.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include <dlock/lock_path.h>

#include "wait_line.h"

namespace dlock::cli {

namespace {

nlohmann::json entry_json(const QueueEntry& e) {
  return {{"node", e.node}, {"token", e.token},       {"host", e.host},
          {"pid", e.pid},   {"since_ms", e.since_ms}, {"label", e.label}};
}

nlohmann::json lock_json(const LockStatus& status) {
  nlohmann::json holders = nlohmann::json::array();
  nlohmann::json waiters = nlohmann::json::array();
  for (const auto& e : status.holders) holders.push_back(entry_json(e));
  for (const auto& e : status.waiters) waiters.push_back(entry_json(e));
  return {{"path", status.path}, {"holders", holders}, {"waiters", waiters}};
}

std::string dump(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// "web-3 pid 4242 since 2025-11-21 10:00:00 (12s ago) token 17 label nightly"
std::string entry_text(const QueueEntry& e, std::int64_t now) {
  // Everything here was written by whoever holds or waits: escaped before it reaches a terminal.
  std::string text =
      printable(e.host.empty() ? (e.raw_data.empty() ? e.node : e.raw_data) : e.host);
  if (e.pid != 0) text += "  pid " + std::to_string(e.pid);
  if (e.since_ms != 0) {
    const std::time_t since = static_cast<std::time_t>(e.since_ms / 1000);
    std::tm local{};
    localtime_r(&since, &local);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local);
    text += std::string("  since ") + when + " (" +
            short_duration(std::chrono::milliseconds(now - e.since_ms)) + " ago)";
  }
  if (e.token != 0) text += "  token " + std::to_string(e.token);
  if (!e.label.empty()) text += "  label " + printable(e.label, 300);
  return text;
}

}  // namespace

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string status_json(const LockStatus& status) { return dump(lock_json(status)); }

std::string list_json(const std::vector<LockStatus>& locks) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& status : locks) all.push_back(lock_json(status));
  return dump(all);
}

std::string status_text(const LockStatus& status, std::int64_t now) {
  std::string text = printable(status.path, 1100) + ": ";
  if (status.holders.empty()) {
    text += "free\n";
  } else {
    text += "held\n";
    for (const auto& e : status.holders) text += "  holder  " + entry_text(e, now) + "\n";
  }
  for (std::size_t i = 0; i < status.waiters.size(); ++i) {
    text += "  " + std::to_string(i + 1) + ". waits  " + entry_text(status.waiters[i], now) + "\n";
  }
  return text;
}

std::string list_text(const std::vector<LockStatus>& locks, std::int64_t now) {
  std::string text;
  for (const auto& status : locks) {
    text += printable(status.path, 1100);
    if (status.holders.empty()) {
      text += "  free";
    } else {
      const QueueEntry& first = status.holders.front();
      text += "  held by " + printable(first.host.empty() ? first.node : first.host);
      if (first.pid != 0) text += " pid " + std::to_string(first.pid);
      if (status.holders.size() > 1) {
        text += " and " + std::to_string(status.holders.size() - 1) + " more";
      } else if (first.since_ms != 0) {
        text += " for " + short_duration(std::chrono::milliseconds(now - first.since_ms));
      }
    }
    if (!status.waiters.empty()) text += ", " + std::to_string(status.waiters.size()) + " waiting";
    text += "\n";
  }
  return text;
}

}  // namespace dlock::cli
