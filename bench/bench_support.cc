#include "bench_support.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace bench {

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value for " + flag);
    const std::string value = argv[i + 1];
    if (flag == "--zk") {
      args.zk = value;
    } else if (flag == "--backend") {
      args.backend = value;
    } else if (flag == "--scenario") {
      args.scenario = value;
    } else if (flag == "--clients") {
      args.clients = std::stoi(value);
    } else if (flag == "--iterations") {
      args.iterations = std::stol(value);
    } else if (flag == "--locks") {
      args.locks = std::stoi(value);
    } else if (flag == "--inflight") {
      args.inflight = std::stoi(value);
    } else if (flag == "--strategy") {
      args.strategy = value;
    } else if (flag == "--impl") {
      args.impl = value;
    } else {
      throw std::invalid_argument("unknown option " + flag);
    }
  }
  if (args.server().empty() || args.scenario.empty() || args.iterations < 1 || args.clients < 1 ||
      args.locks < 1 || args.inflight < 1) {
    throw std::invalid_argument(
        "usage: --zk HOST:PORT|--backend URL --scenario NAME --iterations K [--clients N] [--locks "
        "M]");
  }
  return args;
}

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t process_cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ns = [](const timeval& tv) {
    return static_cast<std::int64_t>(tv.tv_sec) * 1'000'000'000 + tv.tv_usec * 1000;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

double percentile_us(std::vector<std::int64_t> samples_ns, double p) {
  if (samples_ns.empty()) return 0;
  std::sort(samples_ns.begin(), samples_ns.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * samples_ns.size()));
  return samples_ns[std::max<std::size_t>(rank, 1) - 1] / 1000.0;
}

long warmup_count(long iterations) { return (iterations + 9) / 10; }

void JsonLine::key(const std::string& k) {
  body_ += body_.empty() ? "{" : ",";
  body_ += "\"" + k + "\":";
}

JsonLine& JsonLine::add(const std::string& k, const std::string& value) {
  key(k);
  body_ += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') body_ += '\\';
    body_ += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  body_ += '"';
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, double value) {
  key(k);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", std::isfinite(value) ? value : 0.0);
  body_ += buf;
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, long value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

void JsonLine::print() const {
  std::printf("%s}\n", body_.empty() ? "{" : body_.c_str());
  std::fflush(stdout);
}

int report_unsupported(const Args& args) {
  JsonLine().add("impl", args.impl).add("scenario", args.scenario).add("unsupported", true).print();
  return kExitUnsupported;
}

int report_error(const Args& args, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", args.impl.c_str(), what.c_str());
  JsonLine().add("impl", args.impl).add("scenario", args.scenario).add("error", what).print();
  return kExitFailure;
}

ContentionFigures analyze(std::vector<OpRecord> ops, int clients) {
  ContentionFigures figures;
  std::vector<long> per_client(static_cast<std::size_t>(clients), 0);
  for (const OpRecord& op : ops) ++per_client.at(static_cast<std::size_t>(op.client));
  figures.per_client_min = *std::min_element(per_client.begin(), per_client.end());
  figures.per_client_max = *std::max_element(per_client.begin(), per_client.end());

  // In the order the lock was granted. Hand-off: previous holder's release call to the next
  // acquire's return (§3 contended).
  std::sort(ops.begin(), ops.end(), [](const OpRecord& a, const OpRecord& b) {
    return a.acquire_return < b.acquire_return;
  });
  for (std::size_t i = 1; i < ops.size(); ++i) {
    figures.handoff_ns.push_back(ops[i].acquire_return - ops[i - 1].release_call);
  }
  // A held interval [acquire_return, release_call] that is a write must overlap no other one.
  // Sorted by start, a write overlaps an earlier interval iff it starts before the latest end
  // so far, and a later one iff the next interval starts before the write ends. Each write
  // overlapping something counts once; for a plain mutex every op is a write.
  std::int64_t latest_end = INT64_MIN;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpRecord& op = ops[i];
    const bool overlaps_earlier = op.acquire_return < latest_end;
    const bool overlaps_later = i + 1 < ops.size() && ops[i + 1].acquire_return < op.release_call;
    if (op.write && (overlaps_earlier || overlaps_later)) ++figures.violations;
    latest_end = std::max(latest_end, op.release_call);
  }
  return figures;
}

}  // namespace bench
