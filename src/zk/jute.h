// Jute, ZooKeeper's wire encoding: big-endian integers, length-prefixed strings and buffers
// (length -1 = null), count-prefixed vectors. Only the primitives; the messages are proto.h.
#ifndef DLOCK_SRC_ZK_JUTE_H_
#define DLOCK_SRC_ZK_JUTE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::zk::jute {

// Appends encoded values to a byte string. Thread safety: none (one writer per buffer).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void int32(std::int32_t v);
  void int64(std::int64_t v);
  void boolean(bool v) { out_.push_back(v ? '\1' : '\0'); }
  // A ustring or a buffer: both are a 32-bit length and the bytes.
  void bytes(std::string_view v);
  void strings(const std::vector<std::string>& v);
  // Bytes already encoded, as they are.
  void raw(std::string_view v) { out_.append(v); }

  // Reserves a 32-bit length at the current end; patch_length() later fills it with the count
  // of bytes written after it (a frame's length prefix).
  std::size_t begin_length();
  void patch_length(std::size_t at);

 private:
  std::string& out_;
};

// Reads encoded values from a byte range it does not own. Errors are sticky: a read past the
// end, a negative length other than -1 or a length beyond what is left marks the reader
// failed, and every later read returns an empty value. Callers check ok() once at the end.
// Thread safety: none.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  std::int32_t int32();
  std::int64_t int64();
  bool boolean();
  // A null (-1) string reads as empty.
  std::string bytes();
  std::vector<std::string> strings();

  bool ok() const noexcept { return ok_; }
  // What is left to read (nothing once failed).
  std::string_view rest() const noexcept { return ok_ ? in_.substr(pos_) : std::string_view(); }
  std::size_t remaining() const noexcept { return ok_ ? in_.size() - pos_ : 0; }
  // True when every byte was consumed and nothing failed: a message with trailing bytes is as
  // malformed as a short one.
  bool done() const noexcept { return ok_ && pos_ == in_.size(); }

 private:
  bool take(std::size_t n, const char** at);

  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace dlock::zk::jute

#endif  // DLOCK_SRC_ZK_JUTE_H_
