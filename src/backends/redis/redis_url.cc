// redis://, rediss:// and redlock:// URLs, and the registry entries of the Redis backends.
//
//   redis[s]://[[user]:password@]host[:port][/db][?ttl=D&connect_timeout=D&tls_ca=FILE]
//   redlock://[[user]:password@]host[:port],host[:port],...[/db][?ttl=D&connect_timeout=D]
#include <charconv>

#include <dlock/error.h>

#include "core/backend_registry.h"
#include "core/url.h"
#include "net/stream.h"
#include "redis_backend.h"
#include "redlock_backend.h"

namespace dlock::detail {

namespace {

using redis_backend::ClientOptions;
using redis_backend::Endpoint;
using redis_backend::RedlockOptions;

constexpr std::chrono::milliseconds kShortestTtl{100};

int parse_number(std::string_view url, std::string_view text, const char* what, int smallest,
                 int largest) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < smallest ||
      value > largest) {
    bad_url(url, std::string(what) + " '" + std::string(text) + "' is not a number from " +
                     std::to_string(smallest) + " to " + std::to_string(largest));
  }
  return value;
}

// Sets `endpoint`'s host and port from "host[:port]" or "[v6]:port".
void parse_host(std::string_view url, std::string_view authority, Endpoint& endpoint) {
  HostPort parsed = host_and_port(url, authority, 6379);
  endpoint.host = std::move(parsed.host);
  endpoint.port = std::to_string(parsed.port);
}

// What every server of a URL shares: credentials, database, options. The hosts are left to
// the caller (one for redis://, several for redlock://). `ttl` receives ?ttl=.
Endpoint endpoint_from_url(std::string_view url, const UrlParts& parts, bool tls,
                           const OpenOptions& open, std::chrono::milliseconds& ttl) {
  Endpoint endpoint;
  if (parts.path.size() > 1)
    endpoint.db = parse_number(url, parts.path.substr(1), "database", 0, 1 << 30);
  if (parts.user_info) {
    const std::size_t colon = parts.user_info->find(':');
    endpoint.user = percent_decode(url, parts.user_info->substr(0, colon));
    if (colon != std::string_view::npos) {
      endpoint.password = percent_decode(url, parts.user_info->substr(colon + 1));
    }
    if (open.password) endpoint.password = *open.password;
    if (!endpoint.password) {
      bad_url(url, "user '" + endpoint.user +
                       "' has no password: write user:password@, or give the password apart");
    }
  } else if (open.password) {
    bad_url(url,
            "a password was given but the URL names no user (redis://user@host or "
            "redis://default@host)");
  }
  std::string ca_file;
  for_each_query_option(url, parts.query, [&](std::string_view key, std::string_view value) {
    if (key == "ttl") {
      ttl = url_duration(url, value);
      if (ttl < kShortestTtl) bad_url(url, "ttl must be at least 100ms");
    } else if (key == "connect_timeout") {
      endpoint.connect_timeout = url_connect_timeout(url, value);
    } else if (key == "tls_ca" && tls) {
      ca_file = percent_decode(url, value);
    } else {
      bad_url(url, "unknown option '" + std::string(key) + "' (known: ttl, connect_timeout" +
                       (tls ? ", tls_ca)" : ")"));
    }
  });
  if (open.connect_timeout && *open.connect_timeout < endpoint.connect_timeout) {
    endpoint.connect_timeout = *open.connect_timeout;
  }
  endpoint.tls = {.enabled = tls, .ca_file = ca_file};
  return endpoint;
}

ClientOptions options_from_url(std::string_view url, const OpenOptions& open) {
  const Url scheme = split_scheme(url);
  const bool tls = scheme.scheme == "rediss";
  const UrlParts parts = split_url(url, scheme.rest, "redis://host:port[/db]");
  ClientOptions options;
  options.endpoint = endpoint_from_url(url, parts, tls, open, options.ttl);
  if (parts.authority.find(',') != std::string_view::npos) {
    bad_url(url,
            "a redis:// URL names one server; several masters are "
            "redlock://h1:p1,h2:p2,... (without TLS)");
  }
  parse_host(url, parts.authority, options.endpoint);
  // Read now, as ZooKeeper and MySQL read theirs: a CA file that cannot be read is a bad URL,
  // not a server to retry.
  net::make_tls_context(options.endpoint.tls);
  return options;
}

RedlockOptions redlock_options_from_url(std::string_view url, const OpenOptions& open) {
  const UrlParts parts =
      split_url(url, split_scheme(url).rest, "redlock://host:port,host:port,host:port[/db]");
  RedlockOptions options;
  const Endpoint shared = endpoint_from_url(url, parts, false, open, options.ttl);
  std::string_view hosts = parts.authority;
  while (true) {
    const std::size_t comma = hosts.find(',');
    Endpoint endpoint = shared;
    parse_host(url, hosts.substr(0, comma), endpoint);
    for (const Endpoint& earlier : options.masters) {
      if (earlier.address() == endpoint.address()) {
        bad_url(url, "master " + endpoint.address() + " is named twice");
      }
    }
    options.masters.push_back(std::move(endpoint));
    if (comma == std::string_view::npos) break;
    hosts.remove_prefix(comma + 1);
  }
  // One master is a single Redis without dlock's queue and token, two a quorum of both: Redlock
  // only buys anything when the quorum survives a master's loss.
  if (options.masters.size() < 3) {
    bad_url(url, "Redlock needs at least 3 independent masters (for one server: redis://)");
  }
  return options;
}

}  // namespace

void register_redis(BackendRegistry& registry) {
  registry.add(
      {.schemes = {"redis", "rediss"},
       .url_form = "redis[s]://[[user]:password@]host[:port][/db][?ttl=D]",
       .open = [](std::string_view url, const OpenOptions& open) {
         const std::string_view scheme = split_scheme(url).scheme == "rediss" ? "rediss" : "redis";
         return std::shared_ptr<dlock::Backend>(std::make_shared<redis_backend::RedisBackend>(
             redis_backend::RedisClient::open(options_from_url(url, open), open), scheme));
       }});
  registry.add(
      {.schemes = {"redlock"},
       .url_form = "redlock://[[user]:password@]host[:port],host[:port],host[:port][,...]"
                   "[/db][?ttl=D]",
       .open = [](std::string_view url, const OpenOptions& open) {
         return std::shared_ptr<dlock::Backend>(std::make_shared<redis_backend::RedlockBackend>(
             redis_backend::RedlockMasters::open(redlock_options_from_url(url, open), open)));
       }});
}

}  // namespace dlock::detail
