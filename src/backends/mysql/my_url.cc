// mysql:// and mariadb:// URLs, and the registry entry of the MySQL backend.
//   mysql://user[:password]@host[:port]/dbname[?ssl-mode=M&ssl-ca=FILE&connect_timeout=D&heartbeat=D
//                                              &mode=get_lock|table|row&ttl=D]

#include <dlock/error.h>
#include <dlock/mysql.h>
#include <dlock/open.h>

#include "backends/sql/heartbeat.h"
#include "backends/sql/table_locks.h"
#include "core/backend_registry.h"
#include "core/url.h"

namespace dlock::detail {

namespace {

std::shared_ptr<dlock::Backend> open_mysql(std::string_view url, const OpenOptions& open_options) {
  const UrlParts parts =
      split_url(url, split_scheme(url).rest, "mysql://user[:password]@host[:port]/dbname");
  if (parts.path.size() <= 1) {
    bad_url(url, "the URL must name a database: mysql://user@host:port/dbname");
  }
  mysql::Options options;
  options.database = percent_decode(url, parts.path.substr(1));
  if (!parts.user_info) bad_url(url, "the URL must name a user: mysql://user@host");
  const std::size_t colon = parts.user_info->find(':');
  options.user = percent_decode(url, parts.user_info->substr(0, colon));
  if (options.user.empty()) bad_url(url, "the URL must name a user: mysql://user@host");
  if (colon != std::string_view::npos) {
    options.password = percent_decode(url, parts.user_info->substr(colon + 1));
  }
  if (open_options.password) options.password = *open_options.password;
  HostPort host = host_and_port(url, parts.authority, options.port);
  options.host = std::move(host.host);
  options.port = host.port;
  bool ttl_given = false;
  for_each_query_option(url, parts.query, [&](std::string_view key, std::string_view value) {
    if (key == "ssl-mode") {
      options.ssl_mode = percent_decode(url, value);
    } else if (key == "ssl-ca") {
      options.ssl_ca = percent_decode(url, value);
    } else if (key == "connect_timeout") {
      options.connect_timeout = url_connect_timeout(url, value);
    } else if (key == "heartbeat") {
      options.heartbeat = url_duration(url, value);
      sql::check_url_heartbeat(url, options.heartbeat);
    } else if (key == "mode") {
      const std::string mode = percent_decode(url, value);
      if (mode == "get_lock") {
        options.mode = mysql::Mode::get_lock;
      } else if (mode == "table") {
        options.mode = mysql::Mode::table;
      } else if (mode == "row") {
        options.mode = mysql::Mode::row;
      } else {
        bad_url(url, "mode '" + mode + "': get_lock (the default), table or row");
      }
    } else if (key == "ttl") {
      options.ttl = url_duration(url, value);
      ttl_given = true;
    } else {
      bad_url(url, "unknown option '" + std::string(key) +
                       "' (ssl-mode, ssl-ca, connect_timeout, heartbeat, mode, ttl)");
    }
  });
  if (ttl_given && options.mode != mysql::Mode::table) {
    bad_url(url, "ttl= is the lifetime of the table mode's rows: it needs mode=table");
  }
  if (ttl_given) sql::check_url_ttl(url, options.ttl);  // now, not once connected
  if (open_options.connect_timeout) {
    options.connect_timeout = std::min(options.connect_timeout, *open_options.connect_timeout);
  }
  options.stop = open_options.stop;
  return mysql::Backend::open(std::move(options));
}

}  // namespace

void register_mysql(BackendRegistry& registry) {
  registry.add({.schemes = {"mysql", "mariadb"},
                .url_form = "mysql://user[:password]@host[:port]/dbname[?ssl-mode=...&mode=table]",
                .open = open_mysql});
}

}  // namespace dlock::detail
