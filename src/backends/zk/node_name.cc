#include "node_name.h"

#include <uuid/uuid.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

#include <dlock/error.h>

namespace dlock::zk_backend {

namespace {
std::string new_uuid() {
  uuid_t uuid;
  uuid_generate_random(uuid);
  char text[37];
  uuid_unparse_lower(uuid, text);
  return text;
}
}  // namespace

std::string new_curator_prefix() { return "_c_" + new_uuid() + "-"; }

std::string new_kazoo_prefix() {
  std::string hex = new_uuid();
  std::erase(hex, '-');
  return hex;
}

std::string_view sort_key(std::string_view name, std::span<const std::string_view> markers) {
  std::string_view key = name;
  for (std::string_view marker : markers) {
    const std::size_t at = key.rfind(marker);
    if (at != std::string_view::npos) key.remove_prefix(at + marker.size());
  }
  return key;
}

std::string_view sequence_of(std::string_view name) noexcept {
  return name.size() < 10 ? std::string_view() : name.substr(name.size() - 10);
}

bool is_orderable_key(std::string_view key) noexcept {
  return key.size() == 10 &&
         std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool created_right_after(std::string_view earlier, std::string_view later) noexcept {
  const std::string_view first = sequence_of(earlier);
  const std::string_view second = sequence_of(later);
  if (!is_orderable_key(first) || !is_orderable_key(second)) return false;
  std::int64_t a = 0;
  std::int64_t b = 0;
  std::from_chars(first.data(), first.data() + first.size(), a);
  std::from_chars(second.data(), second.data() + second.size(), b);
  return b == a + 1;
}

std::error_code sort_children(std::vector<std::string>& children,
                              std::span<const std::string_view> markers, std::string* offender) {
  for (const std::string& child : children) {
    if (!is_orderable_key(sort_key(child, markers))) {
      if (offender != nullptr) *offender = child;
      return errc::unorderable_path;
    }
  }
  std::stable_sort(children.begin(), children.end(),
                   [markers](const std::string& a, const std::string& b) {
                     return sort_key(a, markers) < sort_key(b, markers);
                   });
  return {};
}

}  // namespace dlock::zk_backend
