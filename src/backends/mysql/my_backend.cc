#include <algorithm>
#include <charconv>
#include <future>
#include <memory>

#include <dlock/error.h>
#include <dlock/lock_path.h>
#include <dlock/mysql.h>

#include "backends/sql/heartbeat.h"
#include "backends/sql/setup_step.h"
#include "core/await_future.h"
#include "core/holder_data.h"
#include "core/refused_contender.h"
#include "my_contender.h"
#include "my_core.h"
#include "my_ddl.h"
#include "my_link.h"
#include "my_mode_statements.h"
#include "my_statements.h"
#include "net/stream.h"

namespace dlock::mysql {

using mysql_backend::MyConnection;
using mysql_backend::Reply;

namespace {

// MySQL compares text ignoring trailing spaces (PAD SPACE collations, MariaDB's utf8mb4_bin
// among them): in dlock's tables '/a ' would be '/a', whose kind, status and list it would
// share, while its named lock and rows are keyed apart. Refused (found by a hostile probe).
// `prefix`: a list()'s prefix, "/" for all.
void check_mysql_path(std::string_view path, bool prefix = false) {
  if (prefix && path == "/") return;
  check_lock_path(path);
  if (path.back() == ' ') {
    throw Error(errc::invalid_path, "'" + printable(path) +
                                        "': ends with a space, which MySQL ignores when it "
                                        "compares text ('/a ' and '/a' would mix)");
  }
}

// Runs the statement `make_sql` writes on the control connection and waits for the reply
// until `deadline`. Throws dlock::Error: the reply's error, cancelled, or timed_out.
Reply query_control(Backend::Impl& core, std::function<std::string(const MyConnection&)> make_sql,
                    Clock::time_point deadline, std::stop_token stop = {}) {
  auto reply = std::make_shared<std::promise<Reply>>();
  std::future<Reply> future = reply->get_future();
  // Owned, not referred to: the caller may have given up at its deadline when this runs.
  core.executor->post([core = core.shared_from_this(), make_sql, reply] {
    core->with_control([make_sql, reply](std::shared_ptr<MyConnection> control, Reply failed) {
      if (!control) return reply->set_value(std::move(failed));
      control->query(make_sql(*control),
                     [reply](Reply done) { reply->set_value(std::move(done)); });
    });
  });
  return detail::await_reply(future, deadline, stop, "MySQL");
}

// query_control for a statement that needs nothing of the connection (no quoting).
Reply query_control(Backend::Impl& core, std::string sql, Clock::time_point deadline,
                    std::stop_token stop = {}) {
  return query_control(
      core, [sql = std::move(sql)](const MyConnection&) { return sql; }, deadline, std::move(stop));
}

std::uint64_t number(const std::optional<std::string>& text) {
  std::uint64_t value = 0;
  if (text) std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

// Whether the server has sequences (MariaDB; MySQL has none, and its tokens stay the rows'
// ids), and if so makes dlock_tokens unless it exists.
bool set_up_tokens(Backend::Impl& core, Clock::time_point deadline, std::stop_token stop) {
  const auto ask = [&](std::string sql) {
    const Reply reply = query_control(core, std::move(sql), deadline, stop);
    return reply.rows.empty() ? std::vector<std::optional<std::string>>{} : reply.rows[0];
  };
  const auto found = ask(mysql_backend::kTokenSequence);
  if (found.size() != 2 || number(found[0]) == 0) return false;
  if (number(found[1]) == 0) {
    const auto first = ask(mysql_backend::kFirstToken);
    ask(mysql_backend::create_token_sequence(first.empty() ? 1 : number(first[0])));
  }
  return true;
}

}  // namespace

std::shared_ptr<Backend> Backend::open(Options options) {
  std::string mode = options.ssl_mode;
  std::transform(mode.begin(), mode.end(), mode.begin(), ::toupper);
  const bool known_mode = mode.empty() || mode == "DISABLED" || mode == "PREFERRED" ||
                          mode == "REQUIRED" || mode == "VERIFY_CA" || mode == "VERIFY_IDENTITY";
  if (!known_mode) {
    throw Error(errc::invalid_argument,
                "ssl-mode '" + options.ssl_mode +
                    "': DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY");
  }
  // Read here, as the Redis and ZooKeeper backends read theirs: the connector's own failure
  // would not name the file.
  if (!options.ssl_ca.empty() && mode != "DISABLED") {
    net::make_tls_context({.enabled = true, .ca_file = options.ssl_ca});
  }
  if (options.database.empty()) {
    throw Error(errc::invalid_argument, "MySQL needs a database for dlock's table");
  }
  sql::check_heartbeat(options.heartbeat);
  auto impl = std::make_shared<Impl>(
      mysql_backend::ConnectParams{.host = options.host,
                                   .port = options.port,
                                   .user = options.user,
                                   .password = options.password,
                                   .database = options.database,
                                   .ssl_mode = mode,
                                   .ssl_ca = options.ssl_ca,
                                   .connect_timeout = options.connect_timeout,
                                   .multi_statements = options.mode == Mode::get_lock,
                                   .server_idle_timeout = std::chrono::ceil<std::chrono::seconds>(
                                       sql::server_idle_timeout(options.heartbeat))},
      options.heartbeat);
  std::shared_ptr<Backend> backend(new Backend(impl));
  const auto deadline = Clock::now() + options.connect_timeout;
  try {
    sql::run_setup(
        {mysql_backend::create_table("dlock_contenders", mysql_backend::kCreateTable)},
        [&](const std::string& sql) {
          return sql::first_value(query_control(*impl, sql, deadline, options.stop).rows);
        });
    const Reply marker =
        query_control(*impl, mysql_backend::kHasMarkerColumn, deadline, options.stop);
    if (number(marker.rows.empty() ? std::nullopt : marker.rows[0][0]) == 0) {
      query_control(*impl, mysql_backend::kAddMarkerColumn, deadline, options.stop);
    }
    query_control(*impl, mysql_backend::kRemoveStaleRows, deadline, options.stop);
    if (options.mode == Mode::get_lock) {
      impl->tokens_from_sequence = set_up_tokens(*impl, deadline, options.stop);
    }
    if (options.mode == Mode::table) {
      impl->table =
          std::make_shared<sql::TableLocks>(std::make_shared<mysql_backend::MyLink>(impl),
                                            mysql_backend::table_statements(), options.ttl);
      impl->table->set_up(deadline);
    } else if (options.mode == Mode::row) {
      impl->row =
          std::make_shared<sql::RowLocks>(std::make_shared<mysql_backend::MyLink>(impl),
                                          mysql_backend::row_statements(), options.connect_timeout);
      impl->row->set_up(deadline);
    }
  } catch (const Error& error) {
    backend->close();
    // The connector's own connect timeout and this deadline are the same length: whichever
    // fires first, a server that did not answer in time is a failure to connect.
    if (error.code() == errc::timed_out) {
      throw Error(errc::connect_failed, "MySQL " + options.host + ":" +
                                            std::to_string(options.port) +
                                            ": no answer within the connect timeout");
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
  check_mysql_path(path);
  if (impl_->table) return impl_->table->status(path, deadline);
  if (impl_->row) return impl_->row->status(path, deadline);
  const std::string target(path);
  const Reply reply = query_control(
      *impl_,
      [target](const MyConnection& c) {
        const std::string quoted = c.quote(target);
        return mysql_backend::status(quoted, mysql_backend::lock_name(target, quoted));
      },
      deadline);
  LockStatus status{.path = target};
  for (const auto& row : reply.rows) {
    const bool holds = number(row[1]) == 1;
    QueueEntry entry{.node = row[0].value_or("")};
    if (row[2]) detail::decode_holder_data(*row[2], entry);
    (holds ? status.holders : status.waiters).push_back(std::move(entry));
  }
  return status;
}

std::vector<std::string> Backend::read_list(std::string_view prefix, Clock::time_point deadline) {
  check_mysql_path(prefix, /*prefix=*/true);
  if (impl_->table) return impl_->table->list(prefix, deadline);
  if (impl_->row) return impl_->row->list(prefix, deadline);
  const std::string under(prefix == "/" ? std::string_view() : prefix);
  const Reply reply = query_control(
      *impl_, [under](const MyConnection& c) { return mysql_backend::list(c.quote(under)); },
      deadline);
  std::vector<std::string> paths;
  for (const auto& row : reply.rows) {
    if (row[0]) paths.push_back(*row[0]);
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::unique_ptr<detail::Contender> Backend::make_contender(std::string_view path,
                                                           const ContenderSpec& spec,
                                                           const LockOptions& options) {
  check_mysql_path(path);
  // With no reader ever admitted, a writer is an exclusive lock like a Mutex's: it may have
  // the same name, as flock -x and a Mutex exclude each other on files.
  if (impl_->table) return impl_->table->make_contender(path, spec, options);
  if (impl_->row) return impl_->row->make_contender(path, spec, options);
  if (spec.role == ContenderSpec::Role::reader) {
    return std::make_unique<detail::RefusedContender>(
        impl_->executor,
        "shared (reader) locks on MySQL: named locks (GET_LOCK) are exclusive only");
  }
  if (spec.role == ContenderSpec::Role::semaphore && spec.permits > mysql_backend::kMostSlots) {
    return std::make_unique<detail::RefusedContender>(
        impl_->executor, "a semaphore of " + std::to_string(spec.permits) +
                             " on MySQL's named locks (GET_LOCK), a lock per permit: at most " +
                             std::to_string(mysql_backend::kMostSlots) +
                             "; the table mode (mode=table) takes more");
  }
  return mysql_backend::make_my_contender(mysql_backend::Site{
      .core = impl_,
      .path = std::string(path),
      .spec = spec,
      .data = detail::encode_holder_data(options.label),
      .seat = spec.role == ContenderSpec::Role::semaphore || !impl_->tokens_from_sequence
                  ? nullptr
                  : std::make_shared<mysql_backend::Seat>(impl_)});
}

std::optional<std::chrono::milliseconds> Backend::loss_notice() const noexcept {
  if (impl_->table) return impl_->table->loss_notice();
  return std::chrono::milliseconds(0);
}

detail::Executor& Backend::executor() noexcept { return *impl_->executor; }

}  // namespace dlock::mysql
