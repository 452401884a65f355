// raw-c-bench: the ZooKeeper C client used directly, no lock logic: the protocol's floor that
// dlock's targets are stated against (contract §6 `raw-c` and §7).
//
//   raw-c-bench --zk HOST:PORT --scenario S --iterations K [--clients N] [--locks M]
//               [--inflight P]
//   S: rtt, uncontended, uncontended-2rtt, uncontended-1rtt, many-locks, pipelined-cd,
//      pipelined-cgd
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <iostream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "zk_raw.h"

namespace {

using bench::Args;
using bench::check_rc;
using bench::CompletionCounter;
using bench::JsonLine;
using bench::now_ns;
using bench::percentile_us;
using bench::RawSession;

// Fills the fields every scenario reports.
JsonLine base_json(const Args& args, int clients, long iterations, long warmup, double elapsed_s,
                   double ops_per_s, const std::vector<std::int64_t>& samples,
                   std::int64_t cpu_ns) {
  JsonLine json;
  json.add("impl", args.impl)
      .add("scenario", args.scenario)
      .add("clients", clients)
      .add("iterations", iterations)
      .add("warmup", warmup)
      .add("elapsed_s", elapsed_s)
      .add("ops_per_s", ops_per_s)
      .add("p50_us", percentile_us(samples, 50))
      .add("p99_us", percentile_us(samples, 99))
      .add("cpu_us_per_op", cpu_ns / 1000.0 / iterations);
  return json;
}

// What one create+getChildren acquire saw: the §7 FIFO checks.
struct AcquireReply {
  std::string created;
  std::vector<std::string> children;
  CompletionCounter done;
};

void on_created(int rc, const char* value, const void* data) {
  auto* reply = const_cast<AcquireReply*>(static_cast<const AcquireReply*>(data));
  if (rc == ZOK) reply->created = value;
  reply->done.done(rc);
}

void on_children(int rc, const String_vector* strings, const void* data) {
  auto* reply = const_cast<AcquireReply*>(static_cast<const AcquireReply*>(data));
  reply->children.clear();
  if (rc == ZOK) reply->children.assign(strings->data, strings->data + strings->count);
  reply->done.done(rc);
}

void ignore_completion(int, const void*) {}

// Completions run on the C client's thread, where an exception cannot propagate: end the run.
void exit_unless_ok(int rc, const char* what) {
  if (rc == ZOK) return;
  std::cerr << "raw-c-bench: " << what << ": " << zerror(rc) << "\n";
  std::_Exit(bench::kExitFailure);
}

// The single-session, one-at-a-time scenarios: rtt and the three uncontended variants.
class Sequential {
 public:
  Sequential(const Args& args, const std::string& base) : args_(args), session_(args.zk) {
    session_.create_path(base + "/warm");
    session_.create_path(base + "/lock");
  }

  int run(const std::string& base) {
    const long warmup = bench::warmup_count(args_.iterations);
    for (long i = 0; i < warmup; ++i) cycle(base + "/warm");
    session_.sync_barrier();
    for (auto* v : {&cycle_ns_, &create_ns_, &children_ns_, &delete_ns_}) v->clear();
    const std::int64_t cpu_start = bench::process_cpu_ns();
    const std::int64_t start = now_ns();
    for (long i = 0; i < args_.iterations; ++i) cycle(base + "/lock");
    session_.sync_barrier();  // the fire-and-forget deletes of uncontended-1rtt (§2)
    const double elapsed_s = (now_ns() - start) / 1e9;
    JsonLine json =
        base_json(args_, 1, args_.iterations, warmup, elapsed_s, args_.iterations / elapsed_s,
                  cycle_ns_, bench::process_cpu_ns() - cpu_start);
    if (args_.scenario == "uncontended") {
      json.add("create_p50_us", percentile_us(create_ns_, 50))
          .add("get_children_p50_us", percentile_us(children_ns_, 50))
          .add("delete_p50_us", percentile_us(delete_ns_, 50));
    }
    if (args_.scenario != "rtt") {
      json.add("own_node_missing", own_node_missing_).add("not_lowest", not_lowest_);
    }
    json.add("async_release", args_.scenario == "uncontended-1rtt").add("threads", 1);
    json.print();
    return 0;
  }

 private:
  void cycle(const std::string& dir) {
    zhandle_t* zh = session_.handle();
    const std::int64_t start = now_ns();
    if (args_.scenario == "rtt") {
      session_.sync_barrier();
      cycle_ns_.push_back(now_ns() - start);
      return;
    }
    std::string created;
    std::vector<std::string> children;
    if (args_.scenario == "uncontended") {
      created = session_.create(dir + "/n-", ZOO_EPHEMERAL | ZOO_SEQUENCE);
      const std::int64_t created_at = now_ns();
      String_vector names{};
      check_rc(zoo_get_children(zh, dir.c_str(), 0, &names), "get children");
      children.assign(names.data, names.data + names.count);
      deallocate_String_vector(&names);
      const std::int64_t listed_at = now_ns();
      check_rc(zoo_delete(zh, created.c_str(), -1), "delete");
      const std::int64_t end = now_ns();
      create_ns_.push_back(created_at - start);
      children_ns_.push_back(listed_at - created_at);
      delete_ns_.push_back(end - listed_at);
      cycle_ns_.push_back(end - start);
    } else {
      // Both requests sent back to back: the acquire costs one round trip.
      AcquireReply reply;
      reply.done.add(2);
      const std::string prefix = dir + "/n-";
      check_rc(zoo_acreate(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_EPHEMERAL | ZOO_SEQUENCE, &on_created, &reply),
               "acreate");
      check_rc(zoo_aget_children(zh, dir.c_str(), 0, &on_children, &reply), "aget_children");
      reply.done.wait();
      created = reply.created;
      children = reply.children;
      if (args_.scenario == "uncontended-2rtt") {
        check_rc(zoo_delete(zh, created.c_str(), -1), "delete");
      } else {
        check_rc(zoo_adelete(zh, created.c_str(), -1, &ignore_completion, nullptr), "adelete");
      }
      cycle_ns_.push_back(now_ns() - start);
    }
    const std::string own = created.substr(created.rfind('/') + 1);
    if (std::find(children.begin(), children.end(), own) == children.end()) ++own_node_missing_;
    for (const auto& c : children) {
      if (bench::sequence_of(c) < bench::sequence_of(own)) {
        ++not_lowest_;
        break;
      }
    }
  }

  const Args& args_;
  RawSession session_;
  std::vector<std::int64_t> cycle_ns_, create_ns_, children_ns_, delete_ns_;
  long own_node_missing_ = 0;
  long not_lowest_ = 0;
};

// pipelined-cd / pipelined-cgd: every session keeps P cycles in flight; each slot is a chain of
// cycles under its own parent, advanced from the client's completion thread.
class Pipelined {
 public:
  Pipelined(const Args& args, const std::string& base) : args_(args), base_(base) {
    for (int c = 0; c < args.clients; ++c)
      sessions_.push_back(std::make_unique<RawSession>(args.zk));
    for (int c = 0; c < args.clients; ++c) {
      for (int s = 0; s < args.inflight; ++s) {
        auto slot = std::make_unique<Slot>();
        slot->owner = this;
        slot->session = sessions_[static_cast<std::size_t>(c)].get();
        slot->suffix = "/c" + std::to_string(c) + "-" + std::to_string(s);
        for (const char* phase : {"/warm", "/lock"})
          slot->session->create_path(base + phase + slot->suffix);
        slots_.push_back(std::move(slot));
      }
    }
  }

  int run() {
    const long warmup = bench::warmup_count(args_.iterations);
    phase("/warm", warmup);
    const std::int64_t cpu_start = bench::process_cpu_ns();
    const std::int64_t start = now_ns();
    phase("/lock", args_.iterations);
    const double elapsed_s = (now_ns() - start) / 1e9;
    std::vector<std::int64_t> latencies;
    for (auto& slot : slots_)
      latencies.insert(latencies.end(), slot->latencies.begin(), slot->latencies.end());
    base_json(args_, args_.clients, args_.iterations, warmup, elapsed_s,
              args_.iterations / elapsed_s, latencies, bench::process_cpu_ns() - cpu_start)
        .add("inflight", args_.inflight)
        .add("threads", 1)
        .print();
    return 0;
  }

 private:
  struct Slot {
    Pipelined* owner = nullptr;
    RawSession* session = nullptr;
    std::string suffix, dir;
    std::int64_t started = 0;
    std::vector<std::int64_t> latencies;
  };

  void phase(const std::string& name, long count) {
    issued_ = 0;
    phase_count_ = count;
    remaining_.add(count);
    for (auto& slot : slots_) {
      slot->dir = base_ + name + slot->suffix;
      slot->latencies.clear();
      start_cycle(slot.get());
    }
    remaining_.wait();
  }

  static void start_cycle(Slot* slot) {
    Pipelined* self = slot->owner;
    if (self->issued_.fetch_add(1) >= self->phase_count_) return;
    slot->started = now_ns();
    zhandle_t* zh = slot->session->handle();
    const std::string prefix = slot->dir + "/n-";
    exit_unless_ok(zoo_acreate(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                               ZOO_EPHEMERAL | ZOO_SEQUENCE, &on_created, slot),
                   "acreate");
    if (self->args_.scenario == "pipelined-cgd") {
      exit_unless_ok(zoo_aget_children(zh, slot->dir.c_str(), 0, &on_listed, slot),
                     "aget_children");
    }
  }
  static void on_created(int rc, const char* value, const void* data) {
    auto* slot = const_cast<Slot*>(static_cast<const Slot*>(data));
    exit_unless_ok(rc, "create");
    exit_unless_ok(zoo_adelete(slot->session->handle(), value, -1, &on_deleted, slot), "adelete");
  }
  static void on_listed(int rc, const String_vector*, const void*) {
    exit_unless_ok(rc, "get children");
  }
  static void on_deleted(int rc, const void* data) {
    auto* slot = const_cast<Slot*>(static_cast<const Slot*>(data));
    exit_unless_ok(rc, "delete");
    slot->latencies.push_back(now_ns() - slot->started);
    slot->owner->remaining_.done(ZOK);
    start_cycle(slot);
  }

  Args args_;
  std::string base_;
  std::vector<std::unique_ptr<RawSession>> sessions_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<long> issued_{0};
  long phase_count_ = 0;
  CompletionCounter remaining_;
};

}  // namespace

namespace {

// many-locks: one session, M parents; a round pipelines the M create+getChildren pairs, waits
// for all 2M replies, then pipelines the M deletes and waits for them.
int run_many_locks(const Args& args, const std::string& base) {
  RawSession session(args.zk);
  const long locks = args.locks;
  for (const char* phase : {"/warm", "/lock"}) {
    for (long i = 0; i < locks; ++i)
      session.create_path(base + phase + "/lock-" + std::to_string(i));
  }
  std::vector<AcquireReply> replies(static_cast<std::size_t>(locks));
  CompletionCounter round_done;
  zhandle_t* zh = session.handle();
  auto round = [&](const std::string& phase) {
    for (long i = 0; i < locks; ++i) {
      auto& reply = replies[static_cast<std::size_t>(i)];
      const std::string dir = base + phase + "/lock-" + std::to_string(i);
      const std::string prefix = dir + "/n-";
      reply.done.add(2);
      check_rc(zoo_acreate(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_EPHEMERAL | ZOO_SEQUENCE, &on_created, &reply),
               "acreate");
      check_rc(zoo_aget_children(zh, dir.c_str(), 0, &on_children, &reply), "aget_children");
    }
    for (auto& reply : replies) reply.done.wait();
    round_done.add(locks);
    for (auto& reply : replies) {
      check_rc(zoo_adelete(
                   zh, reply.created.c_str(), -1,
                   [](int rc, const void* data) {
                     static_cast<CompletionCounter*>(const_cast<void*>(data))->done(rc);
                   },
                   &round_done),
               "adelete");
    }
    round_done.wait();
  };
  const long rounds = (args.iterations + locks - 1) / locks;
  const long warm_rounds = (bench::warmup_count(args.iterations) + locks - 1) / locks;
  for (long r = 0; r < warm_rounds; ++r) round("/warm");
  std::vector<std::int64_t> round_ns;
  const std::int64_t cpu_start = bench::process_cpu_ns();
  for (long r = 0; r < rounds; ++r) {
    const std::int64_t start = now_ns();
    round("/lock");
    round_ns.push_back(now_ns() - start);
  }
  std::int64_t total_ns = 0;
  for (auto ns : round_ns) total_ns += ns;
  const long iterations = rounds * locks;
  base_json(args, 1, iterations, warm_rounds * locks, total_ns / 1e9, iterations / (total_ns / 1e9),
            round_ns, bench::process_cpu_ns() - cpu_start)
      .add("locks", locks)
      .add("threads", 1)
      .print();
  return 0;
}

std::string base_path(const Args& args) {
  std::random_device random;
  return "/bench/" + args.impl + "/" + args.scenario + "-" + std::to_string(getpid()) + "-" +
         std::to_string(random() % 1'000'000'000);
}

int run(const Args& args) {
  const std::string base = base_path(args);
  const std::string& s = args.scenario;
  if (s == "rtt" || s == "uncontended" || s == "uncontended-2rtt" || s == "uncontended-1rtt") {
    return Sequential(args, base).run(base);
  }
  if (s == "pipelined-cd" || s == "pipelined-cgd") return Pipelined(args, base).run();
  if (s == "many-locks") return run_many_locks(args, base);
  return bench::report_unsupported(args);  // contended and rw: raw-c is not a lock
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = bench::parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "raw-c-bench: " << e.what() << "\n";
    return 2;
  }
  if (args.impl.empty()) args.impl = "raw-c";
  try {
    return run(args);
  } catch (const std::exception& e) {
    return bench::report_error(args, e.what());
  }
}
