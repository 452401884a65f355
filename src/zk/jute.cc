#include "jute.h"

namespace dlock::zk::jute {

void Writer::int32(std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  const char b[4] = {static_cast<char>(u >> 24), static_cast<char>(u >> 16),
                     static_cast<char>(u >> 8), static_cast<char>(u)};
  out_.append(b, 4);
}

void Writer::int64(std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  int32(static_cast<std::int32_t>(u >> 32));
  int32(static_cast<std::int32_t>(u & 0xffffffffu));
}

void Writer::bytes(std::string_view v) {
  int32(static_cast<std::int32_t>(v.size()));
  out_.append(v);
}

void Writer::strings(const std::vector<std::string>& v) {
  int32(static_cast<std::int32_t>(v.size()));
  for (const std::string& s : v) bytes(s);
}

std::size_t Writer::begin_length() {
  const std::size_t at = out_.size();
  int32(0);
  return at;
}

void Writer::patch_length(std::size_t at) {
  const auto n = static_cast<std::uint32_t>(out_.size() - at - 4);
  out_[at] = static_cast<char>(n >> 24);
  out_[at + 1] = static_cast<char>(n >> 16);
  out_[at + 2] = static_cast<char>(n >> 8);
  out_[at + 3] = static_cast<char>(n);
}

bool Reader::take(std::size_t n, const char** at) {
  if (!ok_ || in_.size() - pos_ < n) {
    ok_ = false;
    return false;
  }
  *at = in_.data() + pos_;
  pos_ += n;
  return true;
}

std::int32_t Reader::int32() {
  const char* p;
  if (!take(4, &p)) return 0;
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::int32_t>((std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) |
                                   (std::uint32_t{u[2]} << 8) | std::uint32_t{u[3]});
}

std::int64_t Reader::int64() {
  const auto high = static_cast<std::uint32_t>(int32());
  const auto low = static_cast<std::uint32_t>(int32());
  return static_cast<std::int64_t>((std::uint64_t{high} << 32) | low);
}

bool Reader::boolean() {
  const char* p;
  if (!take(1, &p)) return false;
  return *p != 0;
}

std::string Reader::bytes() {
  const std::int32_t n = int32();
  if (!ok_ || n == -1) return {};
  const char* p;
  if (n < 0 || !take(static_cast<std::size_t>(n), &p)) {
    ok_ = false;
    return {};
  }
  return std::string(p, static_cast<std::size_t>(n));
}

std::vector<std::string> Reader::strings() {
  const std::int32_t n = int32();
  if (!ok_ || n == -1) return {};
  // Each element takes at least its 4-byte length: a count beyond that is a lie, refused
  // before it can size an allocation.
  if (n < 0 || static_cast<std::size_t>(n) > remaining() / 4) {
    ok_ = false;
    return {};
  }
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n && ok_; ++i) out.push_back(bytes());
  if (!ok_) return {};
  return out;
}

}  // namespace dlock::zk::jute
