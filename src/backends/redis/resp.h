// RESP, Redis's wire format: commands encoded as arrays of bulk strings, replies parsed by
// hiredis's redisReader (the only part of hiredis dlock uses; see docs/redis.md for why the
// transport is dlock's own).
#ifndef DLOCK_SRC_BACKENDS_REDIS_RESP_H_
#define DLOCK_SRC_BACKENDS_REDIS_RESP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

struct redisReader;

namespace dlock::redis_backend {

// One reply, as RESP2 has them.
struct Reply {
  enum class Type { string, array, integer, nil, status, error };
  Type type = Type::nil;
  std::int64_t integer = 0;
  std::string text{};  // string, status and error
  std::vector<Reply> elements{};

  bool is_error() const noexcept { return type == Type::error; }
};

using Command = std::vector<std::string>;

// The dlock::errc of a Redis error reply: lock_mismatch (our key holds another kind of lock
// or another type), not_supported (a cluster's MOVED/ASK/CROSSSLOT), auth_failed (NOAUTH),
// permission_denied (NOPERM: an ACL forbids the command), connection_lost (LOADING, BUSY,
// MASTERDOWN, TRYAGAIN: worth trying again), backend_failure for anything else.
std::error_code code_of_error(std::string_view error);

// Appends `command` to `out` as a RESP array of bulk strings.
void encode_command(const Command& command, std::string& out);

// Thread safety: none.
class ReplyParser {
 public:
  ReplyParser();
  ~ReplyParser();
  ReplyParser(const ReplyParser&) = delete;
  ReplyParser& operator=(const ReplyParser&) = delete;

  void feed(std::string_view bytes);
  // The next complete reply, if the bytes fed so far hold one. Throws dlock::Error
  // (backend_failure) for bytes that are not RESP: the connection cannot be trusted after it.
  std::optional<Reply> next();

 private:
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader_;
};

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_RESP_H_
