#include "holder_data.h"

#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace dlock::detail {

namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace

std::string encode_holder_data(std::string_view label) {
  static const std::string host = host_name();
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  nlohmann::json record = {{"host", host},
                           {"pid", static_cast<long long>(getpid())},
                           {"since", since.count()},
                           {"label", std::string(label)}};
  return record.dump();
}

void decode_holder_data(std::string_view data, QueueEntry& entry) {
  entry.raw_data = std::string(data);
  const nlohmann::json record = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) return;
  entry.host = record.value("host", "");
  entry.pid = record.value("pid", std::int64_t{0});
  entry.since_ms = record.value("since", std::int64_t{0});
  entry.label = record.value("label", "");
}

}  // namespace dlock::detail
