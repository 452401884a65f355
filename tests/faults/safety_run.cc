#include "safety_run.h"

#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "eventually.h"

extern char** environ;

namespace dlock::test {

std::string Arguments::get(const std::string& name, const std::string& fallback) const {
  const auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

Arguments parse_arguments(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string name = argv[i];
    if (name.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument: " + name);
    arguments.values[name.substr(2)] = argv[i + 1];
  }
  if (argc % 2 == 0) throw std::invalid_argument("every option takes a value");
  return arguments;
}

pid_t spawn_self(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("posix_spawn failed");
  }
  return pid;
}

std::string make_run_directory() {
  char dir_template[] = "/tmp/dlock-safety-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) throw std::runtime_error("mkdtemp failed");
  return dir_template;
}

bool quit_and_reap(const std::string& dir, const std::vector<pid_t>& workers) {
  std::ofstream(quit_file(dir)) << "quit\n";
  bool all_ok = true;
  for (const pid_t pid : workers) {
    int status = 0;
    const bool exited = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; },
                                   std::chrono::seconds(30));
    if (!exited) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    all_ok = all_ok && exited && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return all_ok;
}

WorkerStats sum_worker_stats(const std::string& dir, const std::vector<int>& indices,
                             bool& complete) {
  WorkerStats total;
  complete = true;
  for (const int index : indices) {
    WorkerStats stats;
    if (!read_worker_stats(stats_file(dir, index), stats)) complete = false;
    total.acquisitions += stats.acquisitions;
    total.writes += stats.writes;
    total.fenced += stats.fenced;
    total.lost += stats.lost;
    total.lost_at_ns.insert(total.lost_at_ns.end(), stats.lost_at_ns.begin(),
                            stats.lost_at_ns.end());
    total.errors += stats.errors;
  }
  return total;
}

int conclude(bool ok, const std::string& dir) {
  if (ok) {
    std::filesystem::remove_all(dir);
  } else {
    std::cerr << "safety: run directory kept: " << dir << "\n";
  }
  return ok ? 0 : 1;
}

int safety_main(int argc, char** argv, const char* name, int (*checker)(const Arguments&),
                int (*worker)(const Arguments&)) {
  try {
    const Arguments arguments = parse_arguments(argc, argv);
    return arguments.values.count("worker") ? worker(arguments) : checker(arguments);
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 2;
  }
}

std::int64_t count_violations(const CounterHistory& history, std::int64_t writes_reported,
                              bool every_writer_reported) {
  std::int64_t violations = history.lost_updates + history.tokens_not_increasing;
  if (every_writer_reported) {
    violations += std::abs(history.writes - writes_reported);
  } else if (writes_reported > history.writes) {
    violations += writes_reported - history.writes;
  }
  return violations;
}

}  // namespace dlock::test
