#include "proto.h"

#include <algorithm>

#include "stat.h"

namespace dlock::zk::proto {

namespace {

// Starts a frame: the length prefix to patch, then the request header with xid 0.
class Frame {
 public:
  explicit Frame(std::int32_t op) : out_(), writer_(out_), length_at_(writer_.begin_length()) {
    writer_.int32(0);  // xid, set when queued
    writer_.int32(op);
  }
  jute::Writer& writer() { return writer_; }
  std::string finish() {
    writer_.patch_length(length_at_);
    return std::move(out_);
  }

 private:
  std::string out_;
  jute::Writer writer_;
  std::size_t length_at_;
};

void write_acl(jute::Writer& w, Acl acl) {
  w.int32(1);   // one ACL entry
  w.int32(31);  // Perms.ALL
  if (acl == Acl::open) {
    w.bytes("world");
    w.bytes("anyone");
  } else {
    w.bytes("auth");
    w.bytes("");
  }
}

void write_create(jute::Writer& w, std::string_view path, std::string_view data, Acl acl,
                  std::int32_t flags) {
  w.bytes(path);
  w.bytes(data);
  write_acl(w, acl);
  w.int32(flags);
}

// A multi's operation header (MultiHeader): the operation, not the last, no error.
void write_op_header(jute::Writer& w, std::int32_t op) {
  w.int32(op);
  w.boolean(false);
  w.int32(-1);
}

// The header that ends a multi: type -1, done, err -1.
void write_multi_end(jute::Writer& w) {
  w.int32(-1);
  w.boolean(true);
  w.int32(-1);
}

}  // namespace

std::string connect_request(std::int64_t last_zxid, std::int32_t timeout_ms,
                            std::int64_t session_id, std::string_view password) {
  std::string out;
  jute::Writer w(out);
  const std::size_t at = w.begin_length();
  w.int32(0);  // protocol version
  w.int64(last_zxid);
  w.int32(timeout_ms);
  w.int64(session_id);
  // A new session sends 16 zero bytes, as ZooKeeper's clients do.
  w.bytes(password.empty() ? std::string_view("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) : password);
  w.boolean(false);  // not read-only
  w.patch_length(at);
  return out;
}

std::string auth_request(std::string_view scheme, std::string_view credentials) {
  Frame f(kAuth);
  f.writer().int32(0);  // type, unused
  f.writer().bytes(scheme);
  f.writer().bytes(credentials);
  std::string out = f.finish();
  set_xid(out, kAuthXid);
  return out;
}

std::string ping_request() {
  std::string out = Frame(kPing).finish();
  set_xid(out, kPingXid);
  return out;
}

std::string close_request() { return Frame(kCloseSession).finish(); }

std::string create_request(std::string_view path, std::string_view data, Acl acl,
                           std::int32_t flags) {
  Frame f(flags == kContainer ? kCreateContainer : kCreate2);
  write_create(f.writer(), path, data, acl, flags);
  return f.finish();
}

std::string delete_request(std::string_view path, std::int32_t version) {
  Frame f(kDelete);
  f.writer().bytes(path);
  f.writer().int32(version);
  return f.finish();
}

std::string get_data_request(std::string_view path, bool watch) {
  Frame f(kGetData);
  f.writer().bytes(path);
  f.writer().boolean(watch);
  return f.finish();
}

std::string get_children2_request(std::string_view path) {
  Frame f(kGetChildren2);
  f.writer().bytes(path);
  f.writer().boolean(false);
  return f.finish();
}

std::string sync_request(std::string_view path) {
  Frame f(kSync);
  f.writer().bytes(path);
  return f.finish();
}

std::string remove_watches_request(std::string_view path, std::int32_t type) {
  Frame f(kRemoveWatches);
  f.writer().bytes(path);
  f.writer().int32(type);
  return f.finish();
}

std::string multi_request(const std::vector<Op>& ops, Acl acl) {
  Frame f(kMulti);
  jute::Writer& w = f.writer();
  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::Kind::create:
        write_op_header(w, kCreate);
        write_create(w, op.path, op.data, acl, op.ephemeral ? kEphemeral : kPersistent);
        break;
      case Op::Kind::remove:
        write_op_header(w, kDelete);
        w.bytes(op.path);
        w.int32(op.version);
        break;
      case Op::Kind::set:
        write_op_header(w, kSetData);
        w.bytes(op.path);
        w.bytes(op.data);
        w.int32(op.version);
        break;
      case Op::Kind::check:
        write_op_header(w, kCheck);
        w.bytes(op.path);
        w.int32(op.version);
        break;
    }
  }
  write_multi_end(w);
  return f.finish();
}

std::string multi_of(const std::vector<std::string_view>& writes) {
  Frame f(kMulti);
  jute::Writer& w = f.writer();
  for (std::string_view frame : writes) {
    jute::Reader header(frame.substr(4));  // after the length prefix
    header.int32();                        // xid
    write_op_header(w, header.int32());
    w.raw(header.rest());
  }
  write_multi_end(w);
  return f.finish();
}

std::vector<std::string> set_watches_requests(std::int64_t last_zxid,
                                              const std::vector<std::string>& data_paths) {
  std::vector<std::string> frames;
  std::size_t next = 0;
  while (next < data_paths.size()) {
    std::vector<std::string> batch;
    std::size_t bytes = 0;
    while (next < data_paths.size() && (batch.empty() || bytes < kSetWatchesBatch)) {
      bytes += data_paths[next].size() + 4;
      batch.push_back(data_paths[next++]);
    }
    Frame f(kSetWatches);
    f.writer().int64(last_zxid);
    f.writer().strings(batch);
    f.writer().strings({});  // exist watches
    f.writer().strings({});  // child watches
    std::string frame = f.finish();
    set_xid(frame, kSetWatchesXid);
    frames.push_back(std::move(frame));
  }
  return frames;
}

void set_xid(std::string& frame, std::int32_t xid) {
  const auto u = static_cast<std::uint32_t>(xid);
  frame[4] = static_cast<char>(u >> 24);
  frame[5] = static_cast<char>(u >> 16);
  frame[6] = static_cast<char>(u >> 8);
  frame[7] = static_cast<char>(u);
}

bool decode_connect_response(std::string_view frame, ConnectResponse& out) {
  jute::Reader in(frame);
  in.int32();  // protocol version
  out.timeout_ms = in.int32();
  out.session_id = in.int64();
  out.password = in.bytes();
  // Servers since 3.4 add a read-only flag; older ones do not.
  if (in.remaining() == 1) in.boolean();
  return in.done();
}

bool decode_reply_header(jute::Reader& in, ReplyHeader& out) {
  out.xid = in.int32();
  out.zxid = in.int64();
  out.err = in.int32();
  return in.ok();
}

bool decode_stat(jute::Reader& in, Stat& out) {
  out.czxid = in.int64();
  out.mzxid = in.int64();
  in.int64();  // ctime
  in.int64();  // mtime
  out.version = in.int32();
  out.cversion = in.int32();
  in.int32();  // aversion
  out.ephemeral_owner = in.int64();
  in.int32();  // data length
  out.num_children = in.int32();
  in.int64();  // pzxid
  return in.ok();
}

bool decode_watcher_event(jute::Reader& in, WatcherEvent& out) {
  out.type = in.int32();
  out.state = in.int32();
  out.path = in.bytes();
  return in.done();
}

bool decode_multi_results(jute::Reader& in, std::vector<MultiResult>& results) {
  results.clear();
  for (;;) {
    const std::int32_t type = in.int32();
    const bool done = in.boolean();
    in.int32();  // err of the header: the error result repeats it
    if (!in.ok()) return false;
    if (done) break;
    const std::string_view record = in.rest();
    Stat ignored;
    MultiResult result;
    result.type = type;
    switch (type) {
      case kMultiError:
        result.rc = in.int32();
        // A failed multi reports the operations before the failing one as errors with code
        // 0: they would have been applied, and were not.
        if (result.rc == 0) result.rc = kRolledBack;
        break;
      case kCreate:
        in.bytes();
        break;
      case kCreate2:
        in.bytes();
        decode_stat(in, ignored);
        break;
      case kSetData:
        decode_stat(in, ignored);
        break;
      case kDelete:
      case kCheck:
        break;
      default:
        return false;
    }
    if (!in.ok()) return false;
    if (result.rc == 0) result.body = record.substr(0, record.size() - in.rest().size());
    results.push_back(result);
  }
  return in.done();
}

std::string create2_result(std::string_view create_result, std::int64_t zxid,
                           std::int64_t ephemeral_owner) {
  std::string out(create_result);
  jute::Writer w(out);
  w.int64(zxid);  // czxid
  w.int64(zxid);  // mzxid
  w.int64(0);     // ctime
  w.int64(0);     // mtime
  w.int32(0);     // version
  w.int32(0);     // cversion
  w.int32(0);     // aversion
  w.int64(ephemeral_owner);
  w.int32(0);     // data length
  w.int32(0);     // children
  w.int64(zxid);  // pzxid
  return out;
}

bool decode_multi_response(jute::Reader& in, std::int32_t& first_error) {
  std::vector<MultiResult> results;
  const bool decoded = decode_multi_results(in, results);
  const auto failed = std::find_if(results.begin(), results.end(), [](const MultiResult& result) {
    return result.rc != 0 && result.rc != kRolledBack;
  });
  first_error = failed == results.end() ? 0 : failed->rc;
  return decoded;
}

}  // namespace dlock::zk::proto
