#include "wait_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include <dlock/lock_path.h>

namespace dlock::cli {

namespace {

std::string ordinal(std::size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

std::string who(const QueueEntry& entry) {
  std::string text = printable(entry.host.empty() ? entry.node : entry.host);
  if (entry.pid != 0) text += " pid " + std::to_string(entry.pid);
  return text;
}

int terminal_width() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

}  // namespace

Self this_process() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return {name, static_cast<std::int64_t>(getpid())};
}

std::string short_duration(std::chrono::milliseconds d) {
  const long long s = std::max<long long>(0, d.count() / 1000);
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s / 60 % 60);
  }
  return text;
}

std::string describe_wait(const LockStatus& status, const Self& self,
                          std::chrono::milliseconds waited, std::int64_t now_ms) {
  std::string text = "waiting for " + status.path + ": ";
  for (std::size_t i = 0; i < status.waiters.size(); ++i) {
    const QueueEntry& w = status.waiters[i];
    if (w.pid == self.pid && w.host == self.host) {
      text += ordinal(i + 1) + " in queue, ";
      break;
    }
  }
  if (status.holders.empty()) {
    text += "free, taking it";
  } else {
    const QueueEntry& first = status.holders.front();
    text += "held by " + who(first);
    if (status.holders.size() > 1) {
      text += " and " + std::to_string(status.holders.size() - 1) + " other";
      if (status.holders.size() > 2) text += "s";
    } else if (first.since_ms != 0) {
      text += " for " + short_duration(std::chrono::milliseconds(now_ms - first.since_ms));
    }
  }
  return text + ", waited " + short_duration(waited);
}

WaitLine::WaitLine() : enabled_(isatty(STDERR_FILENO) != 0) {}

void WaitLine::show(std::string_view text) {
  if (!enabled_) return;
  // Never wider than the terminal: a wrapped line could not be redrawn in place.
  const std::size_t width = static_cast<std::size_t>(terminal_width() - 1);
  if (text.size() > width) text = text.substr(0, width);
  std::fprintf(stderr, "\r\033[K%.*s", static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
  shown_ = true;
}

void WaitLine::clear() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace dlock::cli
