// ZooKeeper's client messages (zookeeper.jute) as dlock uses them: request frames built whole,
// ready to send, and replies decoded from one frame's bytes. Knows the wire, not the session.
//
// Errors: every decoder returns false (and leaves its output unspecified) for a malformed
// message: too short, a bad length, trailing bytes. A caller treats that as a broken connection.
#ifndef DLOCK_SRC_ZK_PROTO_H_
#define DLOCK_SRC_ZK_PROTO_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/zk/types.h>

#include "jute.h"

namespace dlock::zk {
struct Stat;
}

namespace dlock::zk::proto {

// Operation codes (ZooDefs.OpCode).
enum OpCode : std::int32_t {
  kNotification = 0,
  kCreate = 1,
  kDelete = 2,
  kGetData = 4,
  kSetData = 5,
  kSync = 9,
  kPing = 11,
  kGetChildren2 = 12,
  kCheck = 13,
  kMulti = 14,
  kCreate2 = 15,
  kRemoveWatches = 18,
  kCreateContainer = 19,
  kAuth = 100,
  kSetWatches = 101,
  kCloseSession = -11,
  kMultiError = -1,
};

// Reserved xids: the server answers these requests (or sends these events) with the same xid.
enum Xid : std::int32_t {
  kWatchXid = -1,
  kPingXid = -2,
  kAuthXid = -4,
  kSetWatchesXid = -8,
};

// The xid of the request after one of `xid`: 1 to 2^31 - 1 in turn, the reserved ones being
// negative. Only the order of replies matters to the client, so wrapping around is safe.
constexpr std::int32_t xid_after(std::int32_t xid) noexcept {
  return xid == std::numeric_limits<std::int32_t>::max() ? 1 : xid + 1;
}

// Create flags (CreateMode's wire values).
enum CreateFlags : std::int32_t {
  kPersistent = 0,
  kEphemeral = 1,
  kEphemeralSequential = 3,
  kContainer = 4,
};

// Watcher types of removeWatches.
constexpr std::int32_t kDataWatcher = 2;
// A multi's result for an operation not applied because another one failed
// (ZRUNTIMEINCONSISTENCY).
constexpr std::int32_t kRolledBack = -2;
// Watch notification types (Watcher.Event.EventType).
enum EventType : std::int32_t {
  kNodeCreated = 1,
  kNodeDeleted = 2,
  kNodeDataChanged = 3,
  kNodeChildrenChanged = 4,
};

// Frames above this are refused as corrupt: ZooKeeper's own limit (jute.maxbuffer) is 1 MiB by
// default, and a length prefix read from a broken stream must not size an allocation.
constexpr std::int32_t kMaxFrame = 64 * 1024 * 1024;
// SetWatches batches above this are split, as ZooKeeper's own clients do: a server refuses a
// packet over jute.maxbuffer and closes the connection.
constexpr std::size_t kSetWatchesBatch = 128 * 1024;

// The ACL new nodes get: world-readable and writable, or only the creating identity when the
// session authenticated (digest auth).
enum class Acl { open, creator_all };

struct ConnectResponse {
  std::int32_t timeout_ms = 0;  // <= 0: the session expired
  std::int64_t session_id = 0;
  std::string password;
};

struct ReplyHeader {
  std::int32_t xid = 0;
  std::int64_t zxid = 0;
  std::int32_t err = 0;
};

struct WatcherEvent {
  std::int32_t type = 0;
  std::int32_t state = 0;
  std::string path;
};

// Request frames: length prefix, then (but for connect) the request header with xid 0, patched
// by set_xid() when the request is queued.
std::string connect_request(std::int64_t last_zxid, std::int32_t timeout_ms,
                            std::int64_t session_id, std::string_view password);
std::string auth_request(std::string_view scheme, std::string_view credentials);
std::string ping_request();
std::string close_request();
std::string create_request(std::string_view path, std::string_view data, Acl acl,
                           std::int32_t flags);
std::string delete_request(std::string_view path, std::int32_t version);
std::string get_data_request(std::string_view path, bool watch);
std::string get_children2_request(std::string_view path);
std::string sync_request(std::string_view path);
std::string remove_watches_request(std::string_view path, std::int32_t type);
// `ops`' paths are the server's (chroot already prefixed).
std::string multi_request(const std::vector<Op>& ops, Acl acl);
// One multi request doing, in order, what `writes` (create_request() and delete_request()
// frames) do: each frame's request record goes in unchanged, under its own operation code.
std::string multi_of(const std::vector<std::string_view>& writes);
// One or more frames, each under kSetWatchesBatch bytes of paths.
std::vector<std::string> set_watches_requests(std::int64_t last_zxid,
                                              const std::vector<std::string>& data_paths);
void set_xid(std::string& frame, std::int32_t xid);

// Reply decoders over one frame's body (the length prefix removed).
bool decode_connect_response(std::string_view frame, ConnectResponse& out);
bool decode_reply_header(jute::Reader& in, ReplyHeader& out);
bool decode_stat(jute::Reader& in, Stat& out);
bool decode_watcher_event(jute::Reader& in, WatcherEvent& out);
// One operation's outcome in a multi's reply: `rc` is 0 (applied) or its error; when one
// operation fails, ZooKeeper applies none, and the others read as kRolledBack. `body` is the
// operation's result record (a create's: its path alone, see create2_result()), empty after
// an error; it views the decoded reply.
struct MultiResult {
  std::int32_t type = 0;  // the result's operation code (kMultiError after an error)
  std::int32_t rc = 0;
  std::string_view body;
};
bool decode_multi_results(jute::Reader& in, std::vector<MultiResult>& results);
// ZooKeeper answers a create in a multi with the path alone (a kCreate result, even for
// create2). A node's stat at its creation follows from the multi's zxid and its owner (the
// session, for an ephemeral node; 0 otherwise): this is the create2 result record (path, stat;
// ctime, mtime and data length 0) that a create2 alone would have had.
std::string create2_result(std::string_view create_result, std::int64_t zxid,
                           std::int64_t ephemeral_owner);
// `first_error` is the first operation's error that is not kRolledBack.
bool decode_multi_response(jute::Reader& in, std::int32_t& first_error);

}  // namespace dlock::zk::proto

#endif  // DLOCK_SRC_ZK_PROTO_H_
