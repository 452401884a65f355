#include "resp.h"

#include <hiredis/hiredis.h>

#include <dlock/error.h>

namespace dlock::redis_backend {

namespace {

Reply convert(const redisReply& raw) {
  Reply reply;
  switch (raw.type) {
    case REDIS_REPLY_STRING:
      reply.type = Reply::Type::string;
      break;
    case REDIS_REPLY_ARRAY:
      reply.type = Reply::Type::array;
      break;
    case REDIS_REPLY_INTEGER:
      reply.type = Reply::Type::integer;
      break;
    case REDIS_REPLY_STATUS:
      reply.type = Reply::Type::status;
      break;
    case REDIS_REPLY_ERROR:
      reply.type = Reply::Type::error;
      break;
    default:
      reply.type = Reply::Type::nil;
      break;
  }
  reply.integer = raw.integer;
  if (raw.str != nullptr) reply.text.assign(raw.str, raw.len);
  reply.elements.reserve(raw.elements);
  for (std::size_t i = 0; i < raw.elements; ++i) reply.elements.push_back(convert(*raw.element[i]));
  return reply;
}

}  // namespace

std::error_code code_of_error(std::string_view error) {
  const auto starts = [&](std::string_view prefix) { return error.starts_with(prefix); };
  if (starts("DLOCKMISMATCH") || starts("WRONGTYPE")) return errc::lock_mismatch;
  if (starts("MOVED") || starts("ASK") || starts("CROSSSLOT") || starts("CLUSTERDOWN")) {
    return errc::not_supported;
  }
  if (starts("NOAUTH") || starts("WRONGPASS")) return errc::auth_failed;
  if (starts("NOPERM")) return errc::permission_denied;
  // Sent to a connection past maxclients, which the server then closes.
  if (starts("ERR max number of clients reached")) return errc::server_unavailable;
  if (starts("LOADING") || starts("BUSY") || starts("MASTERDOWN") || starts("TRYAGAIN")) {
    return errc::connection_lost;
  }
  return errc::backend_failure;
}

void encode_command(const Command& command, std::string& out) {
  out += '*';
  out += std::to_string(command.size());
  out += "\r\n";
  for (const std::string& arg : command) {
    out += '$';
    out += std::to_string(arg.size());
    out += "\r\n";
    out += arg;
    out += "\r\n";
  }
}

ReplyParser::ReplyParser() : reader_(redisReaderCreate(), redisReaderFree) {
  if (!reader_) throw std::bad_alloc();
  // hiredis keeps up to 16 KiB of consumed input by default; a lock reply is small.
  reader_->maxbuf = 64 * 1024;
}

ReplyParser::~ReplyParser() = default;

void ReplyParser::feed(std::string_view bytes) {
  if (redisReaderFeed(reader_.get(), bytes.data(), bytes.size()) != REDIS_OK) {
    throw Error(errc::backend_failure, std::string("reading a Redis reply: ") + reader_->errstr);
  }
}

std::optional<Reply> ReplyParser::next() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
    throw Error(errc::backend_failure,
                std::string("the server's reply is not RESP: ") + reader_->errstr);
  }
  if (raw == nullptr) return std::nullopt;
  std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                     freeReplyObject);
  return convert(*owned);
}

}  // namespace dlock::redis_backend
