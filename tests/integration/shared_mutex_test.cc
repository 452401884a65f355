// dlock::SharedMutex against a real ZooKeeper. Pitfall numbers refer to
// shared/research/zk-lock-anchors.md §5.
#include <algorithm>
#include <future>
#include <latch>
#include <mutex>
#include <shared_mutex>

#include "zk_fixture.h"

namespace dlock::test {
namespace {

class SharedMutexTest : public ZkTest {
 protected:
  // A handle on its own session, so that watches and notifications are per contender.
  std::unique_ptr<SharedMutex> contender(const std::string& path = "/locks/rw") {
    sessions_.push_back(connect());
    return std::make_unique<SharedMutex>(sessions_.back(), path);
  }

  // Waits until `n` contenders are queued on the path.
  void expect_queued(std::size_t n, const std::string& path = "/locks/rw") {
    ASSERT_TRUE(eventually([&] { return contenders(path).size() == n; }))
        << contenders(path).size() << " queued";
  }

  std::vector<std::shared_ptr<zk::Session>> sessions_;
};

TEST_F(SharedMutexTest, NodesAreNamedAsCuratorsReadWriteLock) {
  auto reader = contender();
  auto writer = contender();
  reader->lock_shared();
  auto writing = std::async(std::launch::async, [&] { writer->lock(); });
  expect_queued(2);
  std::vector<std::string> nodes = contenders("/locks/rw");
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    return a.substr(a.size() - 10) < b.substr(b.size() - 10);
  });
  EXPECT_NE(nodes[0].find("-__READ__"), std::string::npos) << nodes[0];
  EXPECT_NE(nodes[1].find("-__WRIT__"), std::string::npos) << nodes[1];
  reader->unlock_shared();
  writing.get();
}

TEST_F(SharedMutexTest, ReadersShareAndAWriterExcludesEveryone) {
  auto r1 = contender();
  auto r2 = contender();
  auto w = contender();
  {
    std::shared_lock a(*r1);
    std::shared_lock b(*r2);  // both readers at once
    EXPECT_TRUE(r1->owns_shared() && r2->owns_shared());
    EXPECT_FALSE(w->try_lock());
  }
  std::unique_lock writing(*w);
  EXPECT_TRUE(w->owns_lock());
  EXPECT_FALSE(r1->try_lock_shared());
  EXPECT_FALSE(r2->try_lock_shared_for(100ms));
}

// Pitfall 23: W1 held, R queued, W2 queued; releasing W1 lets R in, not a deadlock.
TEST_F(SharedMutexTest, AReaderBetweenTwoWritersGetsInWhenTheFirstLeaves) {
  auto w1 = contender();
  auto r = contender();
  auto w2 = contender();
  w1->lock();
  auto reading = std::async(std::launch::async, [&] { r->lock_shared(); });
  expect_queued(2);
  auto writing = std::async(std::launch::async, [&] { w2->lock(); });
  expect_queued(3);
  w1->unlock();
  reading.get();
  EXPECT_TRUE(r->owns_shared());
  EXPECT_EQ(writing.wait_for(100ms), std::future_status::timeout);
  r->unlock_shared();
  writing.get();
  EXPECT_TRUE(w2->owns_lock());
}

// Pitfall 24: a downgrade keeps a queued writer out until the new read lock is released.
TEST_F(SharedMutexTest, DowngradeKeepsTheQueuedWriterWaiting) {
  auto w = contender();
  auto w2 = contender();
  auto r2 = contender();
  w->lock();
  const std::uint64_t write_token = w->token();
  auto writing = std::async(std::launch::async, [&] { w2->lock(); });
  expect_queued(2);
  w->downgrade();
  EXPECT_TRUE(w->owns_shared());
  EXPECT_FALSE(w->owns_lock());
  EXPECT_GT(w->token(), write_token);
  expect_queued(2);  // the write node went, the read node stands in its place
  EXPECT_EQ(writing.wait_for(300ms), std::future_status::timeout);
  EXPECT_FALSE(r2->try_lock_shared());  // a new reader queues behind the waiting writer
  w->unlock_shared();
  writing.get();
  EXPECT_TRUE(w2->owns_lock());
}

// A lost() taken from the write lock fires when the read lock it became is lost (found by a
// review: it was the released write lock's, which never fires).
TEST_F(SharedMutexTest, ALossSignalTakenBeforeADowngradeFiresWithTheReadLock) {
  auto session = connect();
  SharedMutex rw(session, "/locks/rw");
  rw.lock();
  const std::stop_token before = rw.lost();
  rw.downgrade();
  EXPECT_FALSE(before.stop_requested());
  session->close();
  EXPECT_TRUE(eventually([&] { return before.stop_requested(); }));
  EXPECT_TRUE(rw.lost().stop_requested());
}

// A write lock whose node someone else deleted is lost, and the writer queued behind holds:
// a downgrade then fails and leaves no read node, which would have sorted before that holder
// and made a reader and a writer hold at once (found by a probe; lost() never fired either).
TEST_F(SharedMutexTest, ADowngradeOfAWriteLockWhoseNodeWasDeletedFailsAsLost) {
  auto w = contender();
  auto w2 = contender();
  w->lock();
  const std::stop_token lost = w->lost();
  auto writing = std::async(std::launch::async, [&] { w2->lock(); });
  expect_queued(2);
  const auto nodes = contenders("/locks/rw");
  const std::string writer_node = *std::min_element(  // the first by sequence
      nodes.begin(), nodes.end(), [](const std::string& a, const std::string& b) {
        return a.substr(a.size() - 10) < b.substr(b.size() - 10);
      });
  raw().remove("/locks/rw/" + writer_node);
  ASSERT_EQ(writing.wait_for(10s), std::future_status::ready);
  writing.get();
  try {
    w->downgrade();
    ADD_FAILURE() << "downgraded a write lock whose node was deleted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_locked);
    EXPECT_NE(std::string(e.what()).find("deleted"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(eventually([&] { return lost.stop_requested(); }));  // raised on the executor
  EXPECT_TRUE(eventually([&] { return contenders("/locks/rw").size() == 1u; }));
  EXPECT_TRUE(w2->owns_lock());
  w->unlock();
}

TEST_F(SharedMutexTest, DowngradeNeedsTheWriteLock) {
  auto rw = contender();
  EXPECT_THROW(rw->downgrade(), Error);
  rw->lock_shared();
  try {
    rw->downgrade();
    ADD_FAILURE() << "downgraded a read lock";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_locked);
  }
  EXPECT_TRUE(rw->owns_shared());
}

// Pitfall 25: an upgrade fails at once, where Curator's would wait forever.
TEST_F(SharedMutexTest, UpgradeIsRefusedAtOnce) {
  auto rw = contender();
  rw->lock_shared();
  try {
    rw->lock();
    ADD_FAILURE() << "upgraded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::already_locked);
    EXPECT_NE(std::string(e.what()).find("upgrad"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)rw->try_lock_for(1s), Error);
  EXPECT_TRUE(rw->owns_shared());
  EXPECT_EQ(contenders("/locks/rw").size(), 1u);
}

// Pitfall 26: readers behind k writers wake once each, on the last writer ahead of them.
TEST_F(SharedMutexTest, ReadersBehindWritersAreWokenOnceEach) {
  constexpr int kWriters = 3;
  constexpr int kReaders = 4;
  const std::int64_t watches_before = metric("zk_watch_count");
  std::vector<std::unique_ptr<SharedMutex>> writers, readers;
  for (int i = 0; i < kWriters; ++i) writers.push_back(contender());
  for (int i = 0; i < kReaders; ++i) readers.push_back(contender());
  writers[0]->lock();
  std::vector<std::future<void>> waiting;
  for (int i = 1; i < kWriters; ++i) {
    waiting.push_back(std::async(std::launch::async, [&, i] {
      writers[i]->lock();
      writers[i]->unlock();
    }));
    expect_queued(i + 1u);
  }
  std::latch all_read(kReaders);
  for (int i = 0; i < kReaders; ++i) {
    waiting.push_back(std::async(std::launch::async, [&, i] {
      readers[i]->lock_shared();
      all_read.count_down();
      all_read.wait();  // every reader holds at the same time
      readers[i]->unlock_shared();
    }));
    expect_queued(kWriters + i + 1u);
  }
  // Every watch in place: the holder's on its own node, and each waiter's on the one it waits
  // for.
  ASSERT_TRUE(eventually(
      [&] { return metric("zk_watch_count") == watches_before + 1 + (kWriters - 1 + kReaders); }));
  const std::int64_t fired_before = metric("zk_sum_node_deleted_watch_count");
  writers[0]->unlock();
  for (auto& w : waiting) w.get();
  ASSERT_TRUE(eventually([&] { return contenders("/locks/rw").empty(); }));
  // Each of the k-1 later writers woken once by the one before, each reader once by the last
  // writer; Curator's readers would wake once per writer ahead.
  EXPECT_EQ(metric("zk_sum_node_deleted_watch_count") - fired_before, kWriters - 1 + kReaders);
}

// Pitfall 27: a waiter whose node is deleted by someone else queues again (it sees its node
// gone when it lists the directory on its next wake); it never takes the lock on a node that
// is gone, and nothing crashes.
TEST_F(SharedMutexTest, AWaiterWhoseNodeIsDeletedQueuesAgain) {
  auto w = contender();
  auto r = contender();
  w->lock();
  auto reading = std::async(std::launch::async, [&] { r->lock_shared(); });
  expect_queued(2);
  std::string reader_node;
  for (const auto& node : contenders("/locks/rw")) {
    if (node.find("__READ__") != std::string::npos) reader_node = node;
  }
  raw().remove("/locks/rw/" + reader_node);
  expect_queued(1);
  EXPECT_EQ(reading.wait_for(100ms), std::future_status::timeout);
  w->unlock();
  reading.get();
  EXPECT_TRUE(r->owns_shared());
  EXPECT_FALSE(r->lost().stop_requested());
  const auto nodes = contenders("/locks/rw");
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_NE(nodes[0], reader_node);  // it holds on a node of its own, made anew
}

TEST_F(SharedMutexTest, StatusListsEveryReaderAsAHolder) {
  auto r1 = contender();
  auto r2 = contender();
  auto w = contender();
  r1->lock_shared();
  r2->lock_shared();
  auto writing = std::async(std::launch::async, [&] { w->lock(); });
  expect_queued(3);
  const LockStatus status = sessions_[0]->status("/locks/rw");
  EXPECT_EQ(status.holders.size(), 2u);
  EXPECT_EQ(status.waiters.size(), 1u);
  r1->unlock_shared();
  r2->unlock_shared();
  writing.get();
}

}  // namespace
}  // namespace dlock::test
