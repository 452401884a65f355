// A znode's metadata as dlock uses it (the fields of ZooKeeper's Stat it reads).
#ifndef DLOCK_SRC_ZK_STAT_H_
#define DLOCK_SRC_ZK_STAT_H_

#include <cstdint>

namespace dlock::zk {

struct Stat {
  std::int64_t czxid = 0;
  std::int64_t mzxid = 0;
  std::int64_t ephemeral_owner = 0;
  std::int32_t version = 0;
  std::int32_t cversion = 0;
  std::int32_t num_children = 0;
};

}  // namespace dlock::zk

#endif  // DLOCK_SRC_ZK_STAT_H_
