#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include <dlock/clock.h>
#include <dlock/error.h>
#include <dlock/open.h>

namespace dlock {

namespace {

// Nanoseconds in one `unit`; 0 if the unit is unknown.
double unit_ns(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\u00b5s") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  if (unit == "m" || unit == "min") return 60e9;
  if (unit == "h") return 3600e9;
  if (unit == "d") return 86400e9;
  return 0;
}

// Exactly what the message says: 36500d is accepted, 36500d1ns is not. Counted in whole
// nanoseconds: a double holds 36500d in milliseconds to no better than half a microsecond.
constexpr long long kLongestNs =
    std::chrono::duration_cast<std::chrono::nanoseconds>(detail::kLongestDuration).count();

bool is_number_char(char c) { return (c >= '0' && c <= '9') || c == '.'; }

// A decimal number with at most one point and at least one digit; -1 if malformed. One with
// more digits than a double holds is infinite, or, after the point, the smallest positive.
double read_number(std::string_view text) {
  const auto points = std::count(text.begin(), text.end(), '.');
  if (text.empty() || points > 1 || (points == 1 && text.size() == 1)) return -1;
  // from_chars, not stod: a decimal point is '.' whatever the locale (stod read "1.5" as 1
  // under de_DE).
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (end != text.data() + text.size()) return -1;
  if (ec == std::errc::result_out_of_range) {
    const std::string_view whole = text.substr(0, text.find('.'));
    return whole.find_first_not_of('0') != std::string_view::npos
               ? std::numeric_limits<double>::infinity()
               : std::numeric_limits<double>::denorm_min();
  }
  return ec == std::errc() ? number : -1;
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
  const auto bad = [&]() -> Error {
    return Error(errc::invalid_argument,
                 "bad duration '" + std::string(text) +
                     "' (examples: 500ms, 30s, 1.5s, 1m30s, 1h; a bare number is seconds)");
  };
  const auto too_long = [&]() -> Error {
    return Error(errc::invalid_argument,
                 "duration '" + std::string(text) + "' is longer than 100 years (36500d)");
  };
  long long total_ns = 0;
  bool positive = false;
  std::size_t at = 0;
  do {
    const std::size_t number_end =
        std::find_if_not(text.begin() + at, text.end(), is_number_char) - text.begin();
    const double number = read_number(text.substr(at, number_end - at));
    if (number < 0) throw bad();
    const std::size_t unit_end =
        std::find_if(text.begin() + number_end, text.end(), is_number_char) - text.begin();
    const std::string_view unit = text.substr(number_end, unit_end - number_end);
    // Only a number alone goes without a unit: "1m30" is more likely a typo than 1m30s.
    if (unit.empty() && (at != 0 || unit_end != text.size())) throw bad();
    const double scale = unit.empty() ? 1e9 : unit_ns(unit);
    if (scale == 0) throw bad();
    // A hundred years is forever for a lock; beyond it the clock arithmetic would overflow.
    // Each part is rounded to the nanosecond, so that 2.2h (7920000.000000001 ms in binary
    // floating point) does not round up to 7920001 ms.
    const double part_ns = number * scale;
    if (part_ns > static_cast<double>(kLongestNs)) throw too_long();
    total_ns += std::llround(part_ns);
    if (total_ns > kLongestNs) throw too_long();
    positive = positive || part_ns > 0;
    at = unit_end;
  } while (at < text.size());
  // A positive duration under half a nanosecond still counts as one: never zero.
  if (positive && total_ns == 0) total_ns = 1;
  return std::chrono::milliseconds((total_ns + 999'999) / 1'000'000);
}

}  // namespace dlock
