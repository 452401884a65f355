// dlock-demo: several processes contend for one lock on ZooKeeper and report, in the order
// they held it, who held it, for how long and with which fencing token.
//
//   dlock-demo --zk 127.0.0.1:2181 [--workers 4] [--rounds 3] [--path /demo/lock]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <dlock/dlock.h>

namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::steady_clock;

struct Args {
  std::string zk;
  std::string path = "/demo/lock";
  int workers = 4;
  int rounds = 3;
};

// One line per holding, written to a pipe shared by all workers (a write under PIPE_BUF bytes
// is atomic, so lines never interleave).
struct Record {
  unsigned long long token;
  int worker;
  long pid;
  long long acquired_us;  // CLOCK_MONOTONIC, comparable across processes
  long long released_us;
  long long waited_us;
};

long long now_us() {
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

int run_worker(const Args& args, int worker, int out_fd) {
  auto session = dlock::zk::Session::connect({.hosts = args.zk});
  dlock::Mutex mutex(session, args.path, {.label = "demo worker " + std::to_string(worker)});
  std::mt19937 random(static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> hold_ms(50, 150);
  for (int round = 0; round < args.rounds; ++round) {
    const long long asked = now_us();
    std::unique_lock guard(mutex);
    const long long acquired = now_us();
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms(random)));
    const unsigned long long token = mutex.token();
    const long long released = now_us();
    guard.unlock();
    char line[256];
    const int n = std::snprintf(line, sizeof line, "%llu %d %ld %lld %lld %lld\n", token, worker,
                                static_cast<long>(getpid()), acquired, released, acquired - asked);
    if (write(out_fd, line, static_cast<size_t>(n)) != n) return 1;
  }
  return 0;
}

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 == argc) throw std::invalid_argument(flag + " needs a value");
    if (flag == "--zk") {
      args.zk = argv[i + 1];
    } else if (flag == "--path") {
      args.path = argv[i + 1];
    } else if (flag == "--workers") {
      args.workers = std::atoi(argv[i + 1]);
    } else if (flag == "--rounds") {
      args.rounds = std::atoi(argv[i + 1]);
    } else {
      throw std::invalid_argument("unknown option " + flag);
    }
  }
  if (args.zk.empty() || args.workers < 1 || args.rounds < 1) {
    throw std::invalid_argument(
        "usage: dlock-demo --zk HOST:PORT [--workers N] [--rounds K] [--path /lock/path]");
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 1;
  std::cout << args.workers << " processes contend for " << args.path << " on " << args.zk << ", "
            << args.rounds << " turns each.\n";
  // Fork before any session exists in this process: each worker is a process of its own.
  std::vector<pid_t> children;
  for (int w = 1; w <= args.workers; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipe_fds[0]);
      int status = 1;
      try {
        status = run_worker(args, w, pipe_fds[1]);
      } catch (const std::exception& e) {
        std::cerr << "worker " << w << ": " << e.what() << "\n";
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  close(pipe_fds[1]);
  std::vector<Record> records;
  std::string buffer;
  char chunk[4096];
  for (ssize_t n; (n = read(pipe_fds[0], chunk, sizeof chunk)) > 0;) buffer.append(chunk, n);
  for (std::size_t start = 0, end; (end = buffer.find('\n', start)) != std::string::npos;
       start = end + 1) {
    Record r{};
    if (std::sscanf(buffer.c_str() + start, "%llu %d %ld %lld %lld %lld", &r.token, &r.worker,
                    &r.pid, &r.acquired_us, &r.released_us, &r.waited_us) == 6) {
      records.push_back(r);
    }
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  // Fencing tokens grow with every acquisition: sorting by token is the order of holding.
  std::sort(records.begin(), records.end(),
            [](const Record& a, const Record& b) { return a.token < b.token; });
  std::printf("\n  #  worker      pid   waited    held   fencing token\n");
  int overlaps = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (i > 0 && r.acquired_us < records[i - 1].released_us) ++overlaps;
    std::printf("%3zu  %6d  %7ld  %5lld ms  %4lld ms  %llu\n", i + 1, r.worker, r.pid,
                r.waited_us / 1000, (r.released_us - r.acquired_us) / 1000, r.token);
  }
  const std::size_t expected = static_cast<std::size_t>(args.workers) * args.rounds;
  std::printf("\n%zu of %zu turns taken, %d overlapping, %d workers failed: %s\n", records.size(),
              expected, overlaps, failed,
              records.size() == expected && overlaps == 0 && failed == 0 ? "OK" : "FAILED");
  return records.size() == expected && overlaps == 0 && failed == 0 ? 0 : 1;
}
