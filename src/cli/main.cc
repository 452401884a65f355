// dlock: run a command while holding a distributed lock; show who holds a lock.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>

#include <dlock/dlock.h>
#include <dlock/lock_path.h>
#include <dlock/open.h>

#include "command_line.h"
#include "exit_status.h"
#include "report.h"
#include "run_command.h"

namespace {

using namespace dlock;
using namespace dlock::cli;

constexpr const char* kDescription =
    R"(dlock - run a command while holding a lock, on one host or across many

  dlock run [options] NAME [--] COMMAND [ARGS...]
  dlock run [options] NAME -c 'SHELL COMMAND'
  dlock status [--json] NAME
  dlock list [--json] [PREFIX]

Locks are named by slash-separated paths (/jobs/nightly); a bare name means one at the top
(nightly is /nightly). As with flock(1), the command starts at the first word after NAME that
is not an option of dlock. Where locks live is a backend URL, from --backend or the
DLOCK_BACKEND variable:
  zk://[user@]host:2181[,host:2181...][/chroot][?session_timeout=10s]   a ZooKeeper ensemble
  zks://host:2281[,...][/chroot][?ca=FILE&cert=FILE&key=FILE]           the same over TLS
  redis://[user@]host:6379[/db][?ttl=10s]                               Redis (rediss:// over TLS)
  redlock://host:6379,host:6380,host:6381                               Redlock over Redis masters
  postgres://user@host:5432/dbname[?mode=table|row]                     PostgreSQL
  mysql://user@host:3306/dbname[?mode=table|row]                        MySQL, MariaDB
  file:  or  file:///path/to/dir                                        local files, ONE HOST ONLY
The URL's password comes from --password-file or the DLOCK_PASSWORD variable, so that it need
not appear in the URL, where ps shows it; `man dlock` lists every option. Without --backend
or DLOCK_BACKEND, dlock uses file: in a per-user directory ($XDG_RUNTIME_DIR/dlock, else
/tmp/dlock-UID): it needs no server, and it excludes only processes of this host.)";

constexpr const char* kExamples = R"(EXAMPLES
  Run a cron job on one host of many, skip it if another host runs it:
    dlock --backend zk://zk1:2181,zk2:2181/cron run -n /jobs/nightly -- /usr/local/bin/report
  A leader-style service: one instance runs, the others queue behind it:
    dlock run --on-lost=term /services/indexer -- indexer --serve
  At most four encodes at once, wait up to 10 minutes for a slot:
    dlock run --max 4 -w 10m /pools/encoder -c 'ffmpeg -i "$IN" "$OUT"'
  Who holds it, and who waits:
    dlock status /jobs/nightly
    dlock list --json /jobs)";

// The backend URL: --backend's, else DLOCK_BACKEND's, else file:. A DLOCK_BACKEND that is set
// but empty (a template that lost its value) is refused rather than read as "file:", which
// would quietly make a lock of many hosts a lock of each host. Prints and returns false then.
bool backend_url(const std::string& flag, std::string& url) {
  if (!flag.empty()) {
    url = flag;
    return true;
  }
  const char* env = std::getenv("DLOCK_BACKEND");
  if (env != nullptr && *env == '\0') {
    std::fprintf(stderr,
                 "dlock: DLOCK_BACKEND is set but empty: name a backend, or unset it for file:\n");
    return false;
  }
  url = env != nullptr ? env : "file:";
  return true;
}

// An empty value is a mistake (an unset variable in a script), never "the default".
const CLI::Validator kNotEmpty(
    [](const std::string& value) {
      return value.empty() ? std::string("an empty value is not allowed") : std::string();
    },
    "NOT EMPTY");

// A whole number in decimal from `min` to `max`, as flock reads its numbers; CLI11 alone would
// read 0x10 as 16 and 010 as 8 (a semaphore of 8 for --max 010).
CLI::Validator decimal_in(std::uint32_t min, std::uint32_t max) {
  const std::string range = std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& value) {
        // Leading zeros off first: flock takes any number of them, and CLI11 reads them as octal.
        const std::size_t first = value.find_first_not_of('0');
        const std::string digits =
            first == std::string::npos ? value.substr(0, 1) : value.substr(first);
        const bool decimal =
            !digits.empty() && digits.size() <= 10 &&
            std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
        const unsigned long long number = decimal ? std::stoull(digits) : 0;
        if (!decimal || number < min || number > max) {
          return "expected a whole number from " + range + ", got '" + value + "'";
        }
        value = digits;
        return std::string();
      },
      "NUMBER from " + range);
}

// A bare name, as etcdctl and consul take it, is a lock at the top: "nightly" is "/nightly".
std::string lock_name(const std::string& name) { return name.starts_with('/') ? name : "/" + name; }

// The backend password, from the file if one is named, else from DLOCK_PASSWORD. Prints and
// returns false if the file cannot be read, or if its first line is longer than any password
// (/dev/zero, or a file named by mistake, would otherwise be read into memory without end).
bool read_password(const std::string& file, std::optional<std::string>& password) {
  if (file.empty()) {
    if (const char* env = std::getenv("DLOCK_PASSWORD"); env && *env) password = env;
    return true;
  }
  constexpr std::size_t kLongestLine = 64 * 1024;
  std::ifstream in(file);
  std::string text;
  // The first line, as `echo secret > file` writes it. A failed read (a directory opens, and
  // fails with EISDIR when read) sets badbit, and errno says why.
  for (char c; text.size() <= kLongestLine && in.get(c) && c != '\n';) text.push_back(c);
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "dlock: --password-file %s: %s\n", printable(file).c_str(),
                 std::strerror(errno));
    return false;
  }
  if (text.size() > kLongestLine) {
    std::fprintf(stderr, "dlock: --password-file %s: its first line is over %zu bytes\n",
                 printable(file).c_str(), kLongestLine);
    return false;
  }
  if (text.ends_with('\r')) text.pop_back();
  password = std::move(text);
  return true;
}

// Reads a duration option; prints and returns false if it is bad.
bool read_duration(const std::string& option, const std::string& text,
                   std::optional<std::chrono::milliseconds>& out) {
  if (text.empty()) return true;
  try {
    out = parse_duration(text);
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "dlock: %s: %s\n", option.c_str(), message_of(e).c_str());
    return false;
  }
}

int report_error(const Error& e, Phase phase) {
  std::fprintf(stderr, "dlock: %s\n", printable(message_of(e), 1000).c_str());
  return exit_status_for(e.code(), phase);
}

// Opens the backend at `url` and runs `query` on it; the exit status tells which of the two
// failed (opening: the backend is unavailable; querying: the lock name or the server).
int with_backend(const std::string& url, const OpenOptions& options,
                 const std::function<void(Backend&)>& query) {
  std::shared_ptr<Backend> backend;
  try {
    backend = dlock::open(url, options);
  } catch (const Error& e) {
    return report_error(e, Phase::opening);
  }
  try {
    query(*backend);
    return 0;
  } catch (const Error& e) {
    return report_error(e, Phase::locking);
  }
}

int show_status(const std::string& url, const OpenOptions& options, const std::string& name,
                bool json) {
  return with_backend(url, options, [&](Backend& backend) {
    const LockStatus status = backend.status(name);
    std::cout << (json ? status_json(status) : status_text(status, now_ms()));
  });
}

// A lock whose status cannot be read (another program's nodes in it, another user's ACL) is
// reported and left out, and the others are listed; the exit status is the first such lock's.
int show_list(const std::string& url, const OpenOptions& options, const std::string& prefix,
              bool json) {
  int status = 0;
  const int listed = with_backend(url, options, [&](Backend& backend) {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    std::vector<LockStatus> locks;
    for (const std::string& path : backend.list(prefix, deadline)) {
      try {
        locks.push_back(backend.status(path, deadline));
      } catch (const Error& e) {
        const int failed = exit_status_for(e.code(), Phase::locking);
        if (failed == kUnavailable) throw;  // the server's, not the lock's
        // Named once: some messages start with the lock's path already (not with a node's
        // inside it, "/a/b: lock directory holds a child that cannot be ordered").
        std::string message = message_of(e);
        if (!message.starts_with(path + ": ")) message = path + ": " + message;
        std::fprintf(stderr, "dlock: %s\n", printable(message, 1000).c_str());
        if (status == 0) status = failed;
      }
    }
    std::cout << (json ? list_json(locks) : list_text(locks, now_ms()));
  });
  return listed != 0 ? listed : status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "dlock"};
  app.footer(std::string(kExamples) + "\n\n" + exit_status_table() +
             "\n\nSee man dlock for the whole manual.");
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", std::string("dlock ") + dlock::version(),
                       "Print dlock's version and exit");
  // Every message of dlock's starts so, usage errors too (cli.md).
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return "dlock: " + CLI::FailureMessage::simple(failed, e);
  });
  app.fallthrough();
  std::string backend_flag, password_file;
  app.add_option("--backend", backend_flag, "Backend URL (default: $DLOCK_BACKEND, else file:)")
      ->check(kNotEmpty);
  app.add_option("--password-file", password_file,
                 "Read the password of the URL's user from FILE (default: $DLOCK_PASSWORD)")
      ->check(kNotEmpty);

  RunOptions run;
  std::string wait_text, grace_text, shell_command, on_lost = "term";
  bool nonblock = false, exclusive = false;
  CLI::App* run_cmd = app.add_subcommand("run", "Hold the lock NAME while COMMAND runs");
  run_cmd->add_flag("-n,--nonblock,--nb", nonblock, "Fail (exit 1, see -E) if the lock is busy");
  run_cmd
      ->add_option("-w,--wait,--timeout", wait_text,
                   "Give up after DURATION (500ms, 30s, 5m, 1h; a bare number is seconds)")
      ->check(kNotEmpty);
  run_cmd
      ->add_option("-E,--conflict-exit-code", run.conflict_exit_code,
                   "Exit status when -n or -w gives up (default 1)")
      ->transform(decimal_in(0, 255));
  auto* shared = run_cmd->add_flag("-s,--shared", run.shared,
                                   "Take a shared (read) lock: many at once, no exclusive holder");
  auto* max = run_cmd->add_option("--max", run.max, "A semaphore: at most N holders at once")
                  ->transform(decimal_in(1, 1000000))
                  ->excludes(shared);
  run_cmd->add_flag("-x,--exclusive", exclusive, "Take an exclusive lock (the default)")
      ->excludes(shared)
      ->excludes(max);
  run_cmd->add_option("-c,--command", shell_command, "Run this through the shell ($SHELL -c)");
  run_cmd
      ->add_option("--on-lost", on_lost,
                   "If the lock is lost: term (SIGTERM, then SIGKILL after --kill-grace), kill, "
                   "or ignore (default term)")
      ->check(CLI::IsMember({"term", "kill", "ignore"}));
  run_cmd
      ->add_option("--kill-grace", grace_text,
                   "Time between SIGTERM and SIGKILL on loss (default: ZooKeeper 5% of the "
                   "session timeout)")
      ->check(kNotEmpty);
  run_cmd->add_option("--label", run.label, "Recorded with the holder, shown by status");
  run_cmd->add_flag("-v,--verbose", run.verbose, "Say when the lock is busy, held or lost");
  run_cmd->add_option("NAME", run.name, "Lock name, e.g. /jobs/nightly or nightly")
      ->required()
      ->check(kNotEmpty);
  // Only for --help: split_command_line() takes the command off before CLI11 parses.
  run_cmd->add_option("COMMAND", run.command, "The command and its arguments ([--] optional)");

  std::string status_name;
  bool status_json_flag = false;
  CLI::App* status_cmd = app.add_subcommand("status", "Show the holder and the queue of NAME");
  status_cmd->add_flag("--json", status_json_flag, "Print JSON");
  status_cmd->add_option("NAME", status_name, "Lock name")->required()->check(kNotEmpty);

  std::string list_prefix = "/";
  bool list_json_flag = false;
  CLI::App* list_cmd = app.add_subcommand("list", "List the locks under PREFIX (default /)");
  list_cmd->add_flag("--json", list_json_flag, "Print JSON");
  list_cmd->add_option("PREFIX", list_prefix, "Lock name prefix")->check(kNotEmpty);

  const CommandLine line = split_command_line(app, *run_cmd, argc, argv);
  if (line.unknown_subcommand) {
    std::fprintf(stderr, "dlock: unknown command '%s' (commands: run, status, list; see --help)\n",
                 printable(*line.unknown_subcommand).c_str());
    return kUsage;
  }
  std::vector<const char*> own;
  for (const std::string& word : line.own) own.push_back(word.c_str());
  try {
    app.parse(static_cast<int>(own.size()), own.data());
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : kUsage;
  }

  std::string url;
  if (!backend_url(backend_flag, url)) return kUsage;
  OpenOptions open_options;
  if (!read_password(password_file, open_options.password)) return kUsage;
  if (*status_cmd) return show_status(url, open_options, lock_name(status_name), status_json_flag);
  if (*list_cmd) return show_list(url, open_options, lock_name(list_prefix), list_json_flag);

  run.backend_url = url;
  run.password = open_options.password;
  run.name = lock_name(run.name);
  run.command = line.command;
  if (!read_duration("--wait", wait_text, run.wait) ||
      !read_duration("--kill-grace", grace_text, run.kill_grace)) {
    return kUsage;
  }
  if (nonblock) run.wait = std::chrono::milliseconds::zero();
  run.on_lost = on_lost == "kill"     ? OnLost::kill
                : on_lost == "ignore" ? OnLost::ignore
                                      : OnLost::term;
  if (!shell_command.empty()) {
    if (!run.command.empty()) {
      std::fprintf(stderr, "dlock: give either -c 'COMMAND' or COMMAND ARGS..., not both\n");
      return kUsage;
    }
    const char* shell = std::getenv("SHELL");
    run.command = {shell && *shell ? shell : "/bin/sh", "-c", shell_command};
  }
  if (run.command.empty()) {
    std::fprintf(stderr, "dlock: no command given (dlock run NAME COMMAND ARGS...)\n");
    return kUsage;
  }
  return run_command(run);
}
