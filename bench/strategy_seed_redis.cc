// The seed's Redis lock, exactly as the seed describes it, so that it is measured beside dlock's
// queue on the same server: `SET key <random value> NX PX 30000`; on failure sleep and try again
// (100 ms, redis-py's Lock default, since the seed names no interval); release with a Lua script
// that deletes the key only while it still holds our value. Not fair, and every waiter polls.
#include <hiredis/hiredis.h>

#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "strategies.h"

namespace bench {

namespace {

constexpr std::chrono::milliseconds kRetrySleep{100};
constexpr const char* kRelease =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

using ReplyPtr = std::unique_ptr<redisReply, void (*)(void*)>;

// "redis://host:port" (the seed has no credentials or options).
std::pair<std::string, int> host_and_port(const std::string& url) {
  const std::string prefix = "redis://";
  if (url.rfind(prefix, 0) != 0)
    throw std::invalid_argument("seed-redis needs --backend redis://host:port");
  const std::string authority =
      url.substr(prefix.size(), url.find_first_of("/?", prefix.size()) - prefix.size());
  const std::size_t colon = authority.rfind(':');
  if (colon == std::string::npos) return {authority, 6379};
  return {authority.substr(0, colon), std::stoi(authority.substr(colon + 1))};
}

class SeedRedisClient : public BenchClient {
 public:
  explicit SeedRedisClient(const std::string& url) : context_(nullptr, redisFree) {
    const auto [host, port] = host_and_port(url);
    context_.reset(redisConnect(host.c_str(), port));
    if (!context_ || context_->err) {
      throw std::runtime_error("redis " + url + ": " + (context_ ? context_->errstr : "no memory"));
    }
  }
  std::unique_ptr<BenchLock> make_lock(const std::string& path, bool read_write) override;

  ReplyPtr command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    ReplyPtr reply(static_cast<redisReply*>(redisCommandArgv(
                       context_.get(), static_cast<int>(args.size()), argv.data(), lengths.data())),
                   freeReplyObject);
    if (!reply) throw std::runtime_error(std::string("redis: ") + context_->errstr);
    if (reply->type == REDIS_REPLY_ERROR)
      throw std::runtime_error("redis: " + std::string(reply->str));
    return reply;
  }

 private:
  std::unique_ptr<redisContext, void (*)(redisContext*)> context_;
};

class SeedRedisLock : public BenchLock {
 public:
  SeedRedisLock(SeedRedisClient& client, std::string key) : client_(client), key_(std::move(key)) {}
  void lock() override {
    value_ = std::to_string(random_()) + std::to_string(random_());
    for (;;) {
      if (client_.command({"SET", key_, value_, "NX", "PX", "30000"})->type == REDIS_REPLY_STATUS) {
        return;
      }
      std::this_thread::sleep_for(kRetrySleep);
    }
  }
  void unlock() override { client_.command({"EVAL", kRelease, "1", key_, value_}); }
  void lock_shared() override {
    throw std::logic_error("the seed's Redis lock has no shared side");
  }
  void unlock_shared() override {
    throw std::logic_error("the seed's Redis lock has no shared side");
  }

 private:
  SeedRedisClient& client_;
  const std::string key_;
  std::string value_;
  std::random_device random_;
};

std::unique_ptr<BenchLock> SeedRedisClient::make_lock(const std::string& path, bool) {
  return std::make_unique<SeedRedisLock>(*this, path);
}

}  // namespace

Strategy seed_redis_strategy() {
  return {.async_release = false, .read_write = false, .connect = [](const std::string& url) {
            return std::make_unique<SeedRedisClient>(url);
          }};
}

}  // namespace bench
