#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <future>
#include <memory>

#include <dlock/error.h>
#include <dlock/postgres.h>

#include "advisory_key.h"
#include "backends/sql/heartbeat.h"
#include "backends/sql/setup_step.h"
#include "core/await_future.h"
#include "core/holder_data.h"
#include "core/lock_path.h"
#include "core/refused_contender.h"
#include "net/stream.h"
#include "pg_conninfo.h"
#include "pg_contender.h"
#include "pg_core.h"
#include "pg_link.h"
#include "pg_mode_statements.h"

namespace dlock::postgres {

using postgres_backend::PgConnection;
using postgres_backend::Reply;

namespace {

// Runs `sql` with `params` on the primary and waits for the reply until `deadline`. Throws
// dlock::Error: the reply's error, or timed_out.
Reply query_primary(Backend::Impl& core, const std::string& sql,
                    std::vector<postgres_backend::Param> params, Clock::time_point deadline,
                    std::stop_token stop = {}) {
  auto reply = std::make_shared<std::promise<Reply>>();
  std::future<Reply> future = reply->get_future();
  // Owned, not referred to: the caller may have given up at its deadline when this runs.
  core.executor->post([core = core.shared_from_this(), sql, params = std::move(params), reply] {
    core->with_primary([sql, params, reply](std::shared_ptr<PgConnection> primary, Reply failed) {
      if (!primary) return reply->set_value(std::move(failed));
      primary->query(sql, params, [reply](Reply done) { reply->set_value(std::move(done)); });
    });
  });
  return detail::await_reply(future, deadline, stop, "PostgreSQL");
}

// "1763722800.123456" (extract(epoch ...)) in ms; 0 for null. from_chars ignores the locale.
std::int64_t epoch_ms(const std::optional<std::string>& seconds) {
  double value = 0;
  if (seconds) std::from_chars(seconds->data(), seconds->data() + seconds->size(), value);
  return static_cast<std::int64_t>(value * 1000);
}

// Reads the root certificates libpq will read, as the other backends read theirs: libpq names
// an unreadable file only once a server has answered, as a failure to connect. libpq reads
// sslrootcert when it verifies the server (verify-ca, verify-full), and under require when the
// file exists. A conninfo libpq cannot read is left to the connection to report.
void check_root_certificate(const std::string& conninfo) {
  const auto settings = postgres_backend::Conninfo::read(conninfo);
  if (!settings) return;
  const std::string mode = settings->value("sslmode").value_or("");
  const std::string root = settings->value("sslrootcert").value_or("");
  struct stat file {};
  const bool verifies = mode == "verify-ca" || mode == "verify-full";
  const bool read_if_there = mode == "require" && ::stat(root.c_str(), &file) == 0;
  if (!root.empty() && (verifies || read_if_there)) {
    net::make_tls_context({.enabled = true, .ca_file = root});
  }
}

}  // namespace

std::shared_ptr<Backend> Backend::open(Options options) {
  const bool plain = std::all_of(options.schema.begin(), options.schema.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!plain || options.schema.size() > 63) {
    throw Error(errc::invalid_argument,
                "schema '" + options.schema + "': at most 63 of A-Z, a-z, 0-9 and _");
  }
  // The server refuses to create them, and dlock has no business in its own (pg_catalog,
  // information_schema, where a superuser could create dlock's objects).
  if (options.schema.starts_with("pg_") || options.schema == "information_schema") {
    throw Error(errc::invalid_argument,
                "schema '" + options.schema +
                    "': information_schema and names that start with pg_ are the server's");
  }
  sql::check_heartbeat(options.heartbeat);
  check_root_certificate(options.conninfo);
  postgres_backend::ConnectParams params{{"dbname", options.conninfo}};
  if (options.password) params.emplace_back("password", *options.password);
  // A socket nobody answers on is noticed by the heartbeat; keepalives also end a connection
  // whose peer vanished while no query was due.
  params.emplace_back("keepalives", "1");
  params.emplace_back("keepalives_idle", "10");
  params.emplace_back("application_name", "dlock");
  auto impl = std::make_shared<Impl>(std::move(params), options.schema, options.connect_timeout,
                                     options.heartbeat);
  std::shared_ptr<Backend> backend(new Backend(impl));
  const auto deadline = Clock::now() + options.connect_timeout;
  try {
    sql::run_setup(impl->sql.setup, [&](const std::string& statement) {
      return sql::first_value(query_primary(*impl, statement, {}, deadline, options.stop).rows);
    });
    if (options.mode == Mode::table) {
      impl->table = std::make_shared<sql::TableLocks>(
          std::make_shared<postgres_backend::PgLink>(impl),
          postgres_backend::table_statements(options.schema), options.ttl);
      impl->table->set_up(deadline);
    } else if (options.mode == Mode::row) {
      impl->row = std::make_shared<sql::RowLocks>(std::make_shared<postgres_backend::PgLink>(impl),
                                                  postgres_backend::row_statements(options.schema),
                                                  options.connect_timeout);
      impl->row->set_up(deadline);
    }
  } catch (const Error& e) {
    backend->close();
    // What open() promises for a server that does not answer in time, connected or not, the
    // mode's tables made or not.
    if (e.code() == errc::timed_out) {
      throw Error(errc::connect_failed,
                  "PostgreSQL did not answer, or dlock's setup there did not finish, within the "
                  "connect timeout");
    }
    throw;
  }
  return backend;
}

Backend::Backend(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Backend::~Backend() {
  close();
  impl_->executor->settle(Clock::now() + std::chrono::seconds(1));
}

void Backend::close() {
  if (impl_->table) impl_->table->drain_releases(Clock::now() + std::chrono::seconds(1));
  impl_->executor->run_and_wait([impl = impl_.get()] { impl->close(); });
}

LockStatus Backend::read_status(std::string_view path, Clock::time_point deadline) {
  if (impl_->table) return impl_->table->status(path, deadline);
  if (impl_->row) return impl_->row->status(path, deadline);
  check_lock_path(path);
  const Reply reply = query_primary(
      *impl_, impl_->sql.status,
      {std::string(path), std::to_string(postgres_backend::advisory_key(path))}, deadline);
  LockStatus status{.path = std::string(path)};
  std::vector<std::pair<std::int64_t, QueueEntry>> waiters;
  for (const auto& row : reply.rows) {
    QueueEntry entry{.node = "pid:" + row[0].value_or("")};
    if (row[3]) detail::decode_holder_data(*row[3], entry);
    if (row[2]) entry.token = std::stoull(*row[2]);
    if (row[1] == "t") {
      status.holders.push_back(std::move(entry));
    } else {
      waiters.emplace_back(epoch_ms(row[4]), std::move(entry));
    }
  }
  std::sort(status.holders.begin(), status.holders.end(),
            [](const QueueEntry& a, const QueueEntry& b) { return a.token < b.token; });
  std::stable_sort(waiters.begin(), waiters.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [since, entry] : waiters) status.waiters.push_back(std::move(entry));
  return status;
}

std::vector<std::string> Backend::read_list(std::string_view prefix, Clock::time_point deadline) {
  if (impl_->table) return impl_->table->list(prefix, deadline);
  if (impl_->row) return impl_->row->list(prefix, deadline);
  if (prefix != "/") check_lock_path(prefix);
  std::vector<std::string> paths;
  for (const auto& row :
       query_primary(*impl_, impl_->sql.list, {std::string(prefix)}, deadline).rows) {
    paths.push_back(row[0].value_or(""));
  }
  return paths;
}

std::unique_ptr<detail::Contender> Backend::make_contender(std::string_view path,
                                                           const ContenderSpec& spec,
                                                           const LockOptions& options) {
  if (impl_->table) return impl_->table->make_contender(path, spec, options);
  if (impl_->row) return impl_->row->make_contender(path, spec, options);
  if (spec.role == ContenderSpec::Role::semaphore &&
      spec.permits > postgres_backend::kMostPermits) {
    return std::make_unique<detail::RefusedContender>(
        impl_->executor, "a semaphore of " + std::to_string(spec.permits) +
                             " on PostgreSQL's advisory locks, a lock per permit: at most " +
                             std::to_string(postgres_backend::kMostPermits) +
                             "; the table mode (mode=table) takes more");
  }
  return postgres_backend::make_pg_contender(
      postgres_backend::Site{.core = impl_,
                             .path = std::string(path),
                             .spec = spec,
                             .label = options.label,
                             .seat = spec.role == ContenderSpec::Role::semaphore
                                         ? nullptr  // a semaphore polls on the primary
                                         : std::make_shared<postgres_backend::Seat>(impl_)});
}

std::optional<std::chrono::milliseconds> Backend::loss_notice() const noexcept {
  if (impl_->table) return impl_->table->loss_notice();
  return std::chrono::milliseconds(0);
}

detail::Executor& Backend::executor() noexcept { return *impl_->executor; }

}  // namespace dlock::postgres
