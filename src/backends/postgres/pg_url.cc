// postgres:// and postgresql:// URLs, and the registry entry of the PostgreSQL backend.
//
//   postgres://[user[:password]@][host][:port][/dbname][?param=value&...]   a libpq URI
//   postgres:[key=value ...]            a libpq key=value string; "postgres:" alone uses PG*
//
// dlock reads its own options out of the URI's query (schema=, heartbeat=, mode=advisory|table|row,
// ttl= for the table mode) and hands everything
// else to libpq, so sslmode=, connect_timeout=, application_name= ... work as libpq documents.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <optional>

#include <dlock/error.h>
#include <dlock/open.h>
#include <dlock/postgres.h>

#include "backends/sql/heartbeat.h"
#include "backends/sql/table_locks.h"
#include "core/backend_registry.h"
#include "core/url.h"
#include "pg_conninfo.h"

namespace dlock::detail {

namespace {

// Each port of libpq's comma-separated list ("" for the default) from 1 to 65535; libpq itself
// would accept 0 or 99999 and fail only when connecting, as an unreachable server.
void check_ports(std::string_view url, std::string_view ports) {
  while (true) {
    const std::string_view port = ports.substr(0, ports.find(','));
    int value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (!port.empty() &&
        (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535)) {
      bad_url(url, "port '" + std::string(port) + "' is not a number from 1 to 65535");
    }
    if (port.size() == ports.size()) return;
    ports.remove_prefix(port.size() + 1);
  }
}

// libpq's connect_timeout as libpq reads it: whole seconds, blanks around them allowed, 1
// taken as 2; nothing for 0 or less (libpq's "wait for ever", which dlock's default bounds).
// Throws as bad_url for text that is no number, which libpq would refuse when connecting.
std::optional<std::chrono::milliseconds> libpq_connect_timeout(std::string_view url,
                                                               std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\n\r\f\v");
  const std::size_t last = text.find_last_not_of(" \t\n\r\f\v");
  const std::string_view value =
      first == std::string_view::npos ? std::string_view() : text.substr(first, last - first + 1);
  int seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    bad_url(url, "connect_timeout '" + std::string(text) + "' is not a whole number of seconds");
  }
  if (seconds <= 0) return std::nullopt;
  return std::chrono::seconds(std::max(seconds, 2));
}

// Asks libpq to read `conninfo`; a URL it cannot read is a bad URL. Returns the
// connect_timeout that `conninfo` gives, or else PGCONNECT_TIMEOUT, as text.
std::optional<std::string> read_with_libpq(std::string_view url, const std::string& conninfo) {
  std::string why;
  const auto settings = postgres_backend::Conninfo::read(conninfo, &why);
  if (!settings) bad_url(url, why);
  check_ports(url, settings->given("port").value_or(""));
  return settings->value("connect_timeout");
}

// The ?mode= option: which PostgreSQL lock (postgres.h, Mode).
postgres::Mode mode_of(std::string_view url, const std::string& mode) {
  if (mode == "advisory") return postgres::Mode::advisory;
  if (mode == "table") return postgres::Mode::table;
  if (mode == "row") return postgres::Mode::row;
  bad_url(url, "mode '" + mode + "': advisory (the default), table or row");
}

postgres::Options options_from_url(std::string_view url, const OpenOptions& open_options) {
  const Url parts = split_scheme(url);
  postgres::Options options;
  options.password = open_options.password;
  bool timeout_given = false;
  if (!parts.rest.starts_with("//")) {
    options.conninfo = std::string(parts.rest);
  } else {
    check_no_stray_characters(url, url);
    check_password_unsplit(url);
    std::string_view rest = parts.rest;
    const std::size_t question = rest.find('?');
    const std::string_view query =
        question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
    const std::string_view authority = rest.substr(2, rest.find_first_of("/?", 2) - 2);
    // libpq ends the user's password at its first '@', and would take the rest for a host.
    if (authority.find('@') != authority.rfind('@')) {
      bad_url(url,
              "libpq would end the user or password at its first '@' and take the rest for a "
              "host: write '@' in a user or password as %40");
    }
    std::string libpq_query;
    bool ttl_given = false;
    for_each_query_option(url, query, [&](std::string_view key, std::string_view value) {
      if (key == "schema") {
        // Empty, it would silently mean the default: another lock than the one meant.
        if (value.empty()) bad_url(url, "schema= needs a name (leave it out for the default)");
        options.schema = percent_decode(url, value);
      } else if (key == "heartbeat") {
        options.heartbeat = url_duration(url, value);
        sql::check_url_heartbeat(url, options.heartbeat);
      } else if (key == "mode") {
        options.mode = mode_of(url, percent_decode(url, value));
      } else if (key == "ttl") {
        options.ttl = url_duration(url, value);
        ttl_given = true;
      } else {
        // libpq leaves connect_timeout to callers of PQconnectPoll: dlock keeps it.
        if (key == "connect_timeout") {
          options.connect_timeout = url_connect_timeout(url, value);
          timeout_given = true;
        }
        // Appended piece by piece: GCC 12's -Wrestrict misreads `"?" + std::string(...)` at -O2.
        libpq_query += libpq_query.empty() ? '?' : '&';
        libpq_query.append(key).append("=").append(value);
      }
    });
    if (ttl_given && options.mode != postgres::Mode::table) {
      bad_url(url, "ttl= is the lifetime of the table mode's rows: it needs mode=table");
    }
    if (ttl_given) sql::check_url_ttl(url, options.ttl);  // now, not once connected
    options.conninfo = "postgresql:" + std::string(rest.substr(0, question)) + libpq_query;
  }
  const std::optional<std::string> libpq_timeout = read_with_libpq(url, options.conninfo);
  // The query's connect_timeout= was read above, as a duration; a key=value string's, or
  // PGCONNECT_TIMEOUT, as libpq reads them.
  if (!timeout_given && libpq_timeout) {
    if (const auto timeout = libpq_connect_timeout(url, *libpq_timeout)) {
      options.connect_timeout = *timeout;
    }
  }
  if (open_options.connect_timeout) {
    options.connect_timeout = std::min(options.connect_timeout, *open_options.connect_timeout);
  }
  options.stop = open_options.stop;
  return options;
}

}  // namespace

void register_postgres(BackendRegistry& registry) {
  registry.add(
      {.schemes = {"postgres", "postgresql"},
       .url_form =
           "postgres://user[:password]@host:port/dbname[?sslmode=...&schema=...&mode=table]",
       .open = [](std::string_view url, const OpenOptions& open_options) {
         return postgres::Backend::open(options_from_url(url, open_options));
       }});
}

}  // namespace dlock::detail
