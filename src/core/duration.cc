#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include <dlock/clock.h>
#include <dlock/error.h>
#include <dlock/open.h>

namespace dlock {

namespace {

// Milliseconds in one `unit`; 0 if the unit is unknown.
double unit_ms(std::string_view unit) {
  if (unit == "ns") return 1e-6;
  if (unit == "us" || unit == "\u00b5s") return 1e-3;
  if (unit == "ms") return 1;
  if (unit == "s") return 1e3;
  if (unit == "m" || unit == "min") return 60e3;
  if (unit == "h") return 3600e3;
  if (unit == "d") return 86400e3;
  return 0;
}

// Exactly what the message says: 36500d is accepted, 36501d is not.
constexpr double kLongestMs =
    std::chrono::duration<double, std::milli>(detail::kLongestDuration).count();

bool is_number_char(char c) { return (c >= '0' && c <= '9') || c == '.'; }

// A decimal number with at most one point and at least one digit; -1 if malformed.
double read_number(std::string_view text) {
  const auto points = std::count(text.begin(), text.end(), '.');
  if (text.empty() || points > 1 || (points == 1 && text.size() == 1)) return -1;
  // from_chars, not stod: a decimal point is '.' whatever the locale (stod read "1.5" as 1
  // under de_DE). More digits than a double holds is no wait a lock needs: refused.
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end != text.data() + text.size()) return -1;
  return number;
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
  const auto bad = [&]() -> Error {
    return Error(errc::invalid_argument,
                 "bad duration '" + std::string(text) +
                     "' (examples: 500ms, 30s, 1.5s, 1m30s, 1h; a bare number is seconds)");
  };
  double total = 0;
  std::size_t at = 0;
  do {
    const std::size_t number_end =
        std::find_if_not(text.begin() + at, text.end(), is_number_char) - text.begin();
    const double number = read_number(text.substr(at, number_end - at));
    if (number < 0) throw bad();
    const std::size_t unit_end =
        std::find_if(text.begin() + number_end, text.end(), is_number_char) - text.begin();
    const std::string_view unit = text.substr(number_end, unit_end - number_end);
    if (unit.empty()) {
      // Only a number alone goes without a unit: "1m30" is more likely a typo than 1m30s.
      if (at != 0 || unit_end != text.size()) throw bad();
      total = number * 1e3;
    } else {
      const double scale = unit_ms(unit);
      if (scale == 0) throw bad();
      total += number * scale;
    }
    at = unit_end;
  } while (at < text.size());
  // A hundred years is forever for a lock; beyond it the clock arithmetic would overflow.
  if (!std::isfinite(total) || total > kLongestMs) {
    throw Error(errc::invalid_argument,
                "duration '" + std::string(text) + "' is longer than 100 years (36500d)");
  }
  // Whole nanoseconds first, then up to whole milliseconds: 2.2h is 7920000.000000001 ms in
  // binary floating point, and must not round up to 7920001.
  // (A positive duration under half a nanosecond still counts as one: never zero.)
  const auto ns = std::max<long long>(std::llround(total * 1e6), total > 0 ? 1 : 0);
  return std::chrono::milliseconds((ns + 999'999) / 1'000'000);
}

}  // namespace dlock
