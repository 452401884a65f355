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

// `text` as a JSON string; bytes that are not UTF-8 are replaced rather than refused.
std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string encode_holder_data(std::string_view label) {
  // Built by hand, in the order of a sorted JSON object: this runs on every acquisition, and a
  // JSON object costs a map.
  static const std::string host = json_string(host_name());
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return "{\"host\":" + host + ",\"label\":" + json_string(label) +
         ",\"pid\":" + std::to_string(getpid()) + ",\"since\":" + std::to_string(since.count()) +
         "}";
}

void decode_holder_data(std::string_view data, QueueEntry& entry) {
  entry.raw_data = std::string(data);
  const nlohmann::json record = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) return;
  // Foreign data: take each field only if it has the type we write.
  const auto text = [&](const char* key) {
    const auto it = record.find(key);
    return it != record.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const auto number = [&](const char* key) {
    const auto it = record.find(key);
    return it != record.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
  };
  entry.host = text("host");
  entry.pid = number("pid");
  entry.since_ms = number("since");
  entry.label = text("label");
}

}  // namespace dlock::detail
