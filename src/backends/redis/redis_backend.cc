#include "redis_backend.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include <dlock/lock_path.h>

#include "core/holder_data.h"
#include "redis_contender.h"

namespace dlock::redis_backend {

namespace {

std::vector<QueueEntry> entries_of(const Reply& list) {
  std::vector<QueueEntry> entries;
  for (const Reply& pair : list.elements) {
    if (pair.elements.size() != 2) continue;
    QueueEntry entry{.node = pair.elements[0].text};
    const std::string& record = pair.elements[1].text;
    detail::decode_holder_data(record, entry);
    const nlohmann::json parsed = nlohmann::json::parse(record, nullptr, false);
    if (parsed.is_object() && parsed.contains("token") && parsed["token"].is_number_unsigned()) {
      entry.token = parsed["token"].get<std::uint64_t>();
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// `text` as a SCAN pattern that matches it literally.
std::string glob_escaped(std::string_view text) {
  std::string escaped;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

}  // namespace

RedisBackend::~RedisBackend() { client_->drain(Clock::now() + std::chrono::seconds(1)); }

LockStatus RedisBackend::status(std::string_view path, Clock::time_point deadline) {
  check_lock_path(path);
  const Reply reply = client_->call(status_script(), LockKeys(path), deadline);
  LockStatus status{.path = std::string(path)};
  if (reply.elements.size() == 2) {
    status.holders = entries_of(reply.elements[0]);
    status.waiters = entries_of(reply.elements[1]);
  }
  return status;
}

std::vector<std::string> RedisBackend::list(std::string_view prefix, Clock::time_point deadline) {
  if (prefix != "/") check_lock_path(prefix);
  const std::string under = prefix == "/" ? "/" : std::string(prefix);
  const std::string pattern = glob_escaped(under) + "*" + std::string(kKindSuffix);
  std::vector<std::string> paths;
  std::string cursor = "0";
  do {
    const Reply reply =
        client_->call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, deadline);
    if (reply.elements.size() != 2) break;
    cursor = reply.elements[0].text;
    for (const Reply& key : reply.elements[1].elements) {
      std::string path = key.text.substr(0, key.text.size() - kKindSuffix.size());
      const bool inside = under == "/" || path == under || path.starts_with(under + "/");
      if (inside) paths.push_back(std::move(path));
    }
  } while (cursor != "0");
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

std::unique_ptr<detail::Contender> RedisBackend::make_contender(std::string_view path,
                                                                const ContenderSpec& spec,
                                                                const LockOptions& options) {
  return std::make_unique<RedisContender>(
      Site{.client = client_, .keys = LockKeys(path), .spec = spec, .label = options.label});
}

std::optional<std::chrono::milliseconds> RedisBackend::loss_notice() const noexcept {
  // lost() fires at ttl x (1 - drift) - margin after the last renewal was sent.
  const lease::LeaseTerms terms = client_->lease_terms();
  const auto drift = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::floor(terms.ttl.count() * terms.drift)));
  return drift + terms.margin;
}

}  // namespace dlock::redis_backend
