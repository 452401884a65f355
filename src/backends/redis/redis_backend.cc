#include "redis_backend.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <dlock/error.h>
#include <dlock/lock_path.h>

#include "core/holder_data.h"
#include "key_scan.h"
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

}  // namespace

RedisBackend::~RedisBackend() {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(1);
  client_->drain(deadline);
  client_->executor()->settle(deadline);
}

LockStatus RedisBackend::read_status(std::string_view path, Clock::time_point deadline) {
  check_lock_path(path);
  const LockKeys keys(path);
  Reply reply;
  try {
    reply = client_->call(status_script(), keys, deadline);
  } catch (const Error& e) {
    // The lock key's own type is shown; one of dlock's keys of another type fails the script.
    if (e.code() == errc::lock_mismatch) throw Error(errc::lock_mismatch, keys.another_type());
    throw;
  }
  LockStatus status{.path = std::string(path)};
  if (reply.elements.size() == 2) {
    status.holders = entries_of(reply.elements[0]);
    status.waiters = entries_of(reply.elements[1]);
  }
  return status;
}

std::vector<std::string> RedisBackend::read_list(std::string_view prefix,
                                                 Clock::time_point deadline) {
  return scan_paths(prefix, kKindSuffix,
                    [&](Command command) { return client_->call(std::move(command), deadline); });
}

std::unique_ptr<detail::Contender> RedisBackend::make_contender(std::string_view path,
                                                                const ContenderSpec& spec,
                                                                const LockOptions& options) {
  return make_redis_contender(
      Site{.client = client_, .keys = LockKeys(path), .spec = spec, .label = options.label});
}

std::optional<std::chrono::milliseconds> RedisBackend::loss_notice() const noexcept {
  return lease::LeaseClock(client_->lease_terms()).notice();
}

}  // namespace dlock::redis_backend
