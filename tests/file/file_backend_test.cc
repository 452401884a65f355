// The local file backend: exclusion within one process and across processes, shared and
// semaphore roles, tokens, status and list, deadlines and cancellation.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <optional>
#include <thread>

#include <dlock/dlock.h>

namespace dlock {
namespace {

using namespace std::chrono_literals;

class FileBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/dlock-file-test-XXXXXX";
    dir_ = mkdtemp(name);
    backend_ = file::Backend::open({.directory = dir_});
  }
  void TearDown() override {
    backend_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A child process that waits for go(), then (as the user `as`, if given) opens the backend of
  // dir_ and exits with what `body` returns (0 for success; 2 if it could not become `as`, 3 if
  // `body` threw).
  // Fork while single-threaded: backend_ reset first.
  struct Child {
    pid_t pid = -1;
    int go_fd = -1;
    void go() const { ASSERT_EQ(1, write(go_fd, "g", 1)); }
    // Its exit status, or -1 if it did not exit.
    int wait() const {
      int status = 0;
      close(go_fd);
      if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
      return WEXITSTATUS(status);
    }
  };
  struct User {
    uid_t uid;
    gid_t gid;
  };
  Child fork_child(const std::function<bool(std::shared_ptr<file::Backend>)>& body,
                   std::optional<User> as = {}) {
    int go[2];
    if (pipe(go) != 0) return {};
    const pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      char byte;
      (void)!read(go[0], &byte, 1);
      if (as && (setgroups(0, nullptr) != 0 || setgid(as->gid) != 0 || setuid(as->uid) != 0)) {
        _exit(2);
      }
      try {
        _exit(body(file::Backend::open({.directory = dir_})) ? 0 : 1);
      } catch (...) {
        _exit(3);  // not back into the test runner, which would go on in this child
      }
    }
    close(go[0]);
    return {pid, go[1]};
  }

  // Whether status(path) shows a waiter within 5 s.
  bool someone_waits(const std::string& path) {
    for (int polls = 0; polls < 500; ++polls) {
      if (!backend_->status(path).waiters.empty()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  std::string dir_;
  std::shared_ptr<file::Backend> backend_;
};

TEST_F(FileBackendTest, TwoHandlesInOneProcessExcludeEachOther) {
  Mutex a(backend_, "/m");
  Mutex b(backend_, "/m");
  ASSERT_TRUE(a.try_lock());
  EXPECT_FALSE(b.try_lock());
  EXPECT_FALSE(b.try_lock_for(50ms));
  a.unlock();
  EXPECT_TRUE(b.try_lock());
  EXPECT_FALSE(a.try_lock());
  b.unlock();
}

TEST_F(FileBackendTest, TwoBackendsOnOneDirectoryInOneProcessExcludeEachOther) {
  auto other = file::Backend::open({.directory = dir_});
  Mutex a(backend_, "/m");
  Mutex b(other, "/m");
  ASSERT_TRUE(a.try_lock());
  EXPECT_FALSE(b.try_lock());
}

// A child process holds the lock until told to let go through a pipe.
TEST_F(FileBackendTest, ExclusionAcrossProcesses) {
  int held[2], release[2];
  ASSERT_EQ(0, pipe(held));
  ASSERT_EQ(0, pipe(release));
  // fork() only while single-threaded: a child forked beside another thread (the backend's
  // executor) can inherit a lock that thread held, malloc's for one, and hang.
  backend_.reset();
  const pid_t child = fork();
  if (child == 0) {
    close(release[1]);
    auto backend = file::Backend::open({.directory = dir_});
    Mutex m(backend, "/across");
    m.lock();
    char byte = 1;
    (void)!write(held[1], &byte, 1);
    (void)!read(release[0], &byte, 1);
    _exit(0);  // without unlocking: the kernel drops the flock with the process
  }
  close(release[0]);
  backend_ = file::Backend::open({.directory = dir_});
  char byte;
  ASSERT_EQ(1, read(held[0], &byte, 1));
  Mutex m(backend_, "/across");
  EXPECT_FALSE(m.try_lock());
  const LockStatus status = backend_->status("/across");
  ASSERT_EQ(1u, status.holders.size());
  EXPECT_EQ(child, status.holders[0].pid);
  close(release[1]);
  EXPECT_TRUE(m.try_lock_for(5s));
  int ignored;
  waitpid(child, &ignored, 0);
  // The dead child's record went with it.
  const LockStatus after = backend_->status("/across");
  ASSERT_EQ(1u, after.holders.size());
  EXPECT_EQ(getpid(), after.holders[0].pid);
}

// A child forked (without exec) while the lock is held shares the lock's open files. The
// parent's unlock() frees the lock, and the name for another kind of lock, all the same
// (found by a hostile probe: it stayed held until the child exited), and the child's release
// of its copy frees nothing of the parent's.
// The child only waits on a pipe and releases: the executor runs beside it (see above).
TEST_F(FileBackendTest, AForkedChildNeitherKeepsNorFreesItsParentsLock) {
  Mutex parent(backend_, "/forked");
  Lease lease = parent.acquire();
  int go[2];
  ASSERT_EQ(0, pipe(go));
  const pid_t child = fork();
  if (child == 0) {
    char byte;
    (void)!read(go[0], &byte, 1);
    lease.release();  // the child's copy
    _exit(0);
  }
  close(go[0]);
  char byte = 1;
  ASSERT_EQ(1, write(go[1], &byte, 1));
  int ignored;
  ASSERT_EQ(child, waitpid(child, &ignored, 0));
  const LockStatus held = backend_->status("/forked");
  ASSERT_EQ(1u, held.holders.size()) << "the child's release removed the parent's record";
  EXPECT_EQ(getpid(), held.holders[0].pid);

  int hold_on[2];
  ASSERT_EQ(0, pipe(hold_on));
  const pid_t second = fork();
  if (second == 0) {
    close(hold_on[1]);
    (void)!read(hold_on[0], &byte, 1);  // lives, with its copy, until the parent closes
    _exit(0);
  }
  close(hold_on[0]);
  lease.release();
  // Nobody uses the name: a semaphore may take it (the child's copy of the mutex's claim on
  // the name's kind kept it, as lock_mismatch, found by a review).
  Semaphore semaphore(backend_, "/forked", 2);
  EXPECT_TRUE(semaphore.try_lock()) << "the forked child's copy kept the name a mutex's";
  semaphore.unlock();
  Mutex other(backend_, "/forked");
  EXPECT_TRUE(other.try_lock()) << "the forked child's copy kept the parent's lock";
  close(hold_on[1]);
  ASSERT_EQ(second, waitpid(second, &ignored, 0));
  close(go[1]);
}

// A child forked while its parent holds a lock starts with none of its parent's claims: once
// the parent lets go, the child takes the lock (found by a review: the in-process claim,
// copied with the process, kept the child out for good).
TEST_F(FileBackendTest, AForkedChildTakesALockItsParentHasLetGo) {
  Lease lease = Mutex(backend_, "/handed-down").acquire();
  backend_.reset();  // a Lease on files outlives its backend: fork() while single-threaded
  const Child child = fork_child([](std::shared_ptr<file::Backend> backend) {
    return Mutex(std::move(backend), "/handed-down").try_lock_for(2s);
  });
  ASSERT_GT(child.pid, 0);
  lease.release();
  child.go();
  EXPECT_EQ(0, child.wait()) << "the child could not take the lock its parent let go";
}

TEST_F(FileBackendTest, ReadersShareWritersExclude) {
  SharedMutex r1(backend_, "/rw"), r2(backend_, "/rw"), w(backend_, "/rw");
  ASSERT_TRUE(r1.try_lock_shared());
  ASSERT_TRUE(r2.try_lock_shared());
  EXPECT_FALSE(w.try_lock());
  r1.unlock_shared();
  EXPECT_FALSE(w.try_lock());
  r2.unlock_shared();
  ASSERT_TRUE(w.try_lock());
  EXPECT_FALSE(r1.try_lock_shared());
  // A plain Mutex on the same name is a writer too.
  Mutex m(backend_, "/rw");
  EXPECT_FALSE(m.try_lock());
  EXPECT_EQ(1u, backend_->status("/rw").holders.size());
}

// flock queues nobody: readers whose holds overlapped kept a waiting writer out for ever
// (found by a hostile probe). A reader lets a writer that waits ahead of it go first.
TEST_F(FileBackendTest, AReaderLetsAWriterWaitingAheadOfItGoFirst) {
  SharedMutex holding(backend_, "/rw"), writer(backend_, "/rw"), later(backend_, "/rw");
  ASSERT_TRUE(holding.try_lock_shared());
  std::future<bool> wrote = std::async(std::launch::async, [&] {
    const bool got = writer.try_lock_for(10s);
    if (got) writer.unlock();
    return got;
  });
  ASSERT_TRUE(someone_waits("/rw")) << "the writer never queued";
  EXPECT_FALSE(later.try_lock_shared_for(300ms)) << "a reader passed the waiting writer";
  holding.unlock_shared();
  EXPECT_TRUE(wrote.get());
  EXPECT_TRUE(later.try_lock_shared());
}

// A waiting writer stopped with Ctrl-Z or SIGSTOP keeps its record flocked, and held every
// reader up until it was continued (found by a hostile probe). It stops touching the record,
// and readers pass it after a second.
TEST_F(FileBackendTest, AReaderPassesAWaitingWriterThatWasStopped) {
  backend_.reset();  // fork() while single-threaded
  const Child child = fork_child([](std::shared_ptr<file::Backend> backend) {
    return SharedMutex(std::move(backend), "/rw").try_lock_for(60s);
  });
  ASSERT_GT(child.pid, 0);
  backend_ = file::Backend::open({.directory = dir_});
  SharedMutex holding(backend_, "/rw"), later(backend_, "/rw");
  ASSERT_TRUE(holding.try_lock_shared());
  child.go();
  ASSERT_TRUE(someone_waits("/rw")) << "the writer never queued";
  ASSERT_EQ(0, kill(child.pid, SIGSTOP));
  EXPECT_TRUE(later.try_lock_shared_for(10s)) << "the stopped writer held the reader up";
  kill(child.pid, SIGKILL);
  child.wait();
}

// A handle destroyed while another thread waited on it freed what that thread read when its
// abandoned attempt woke it (AddressSanitizer: heap-use-after-free; found by a hostile probe of
// the API): the wait ends cancelled, and nothing stays queued.
TEST_F(FileBackendTest, AHandleDestroyedUnderAWaitingThreadEndsTheWaitCancelled) {
  Mutex holder(backend_, "/x");
  holder.lock();
  auto waiter = std::make_unique<Mutex>(backend_, "/x");
  auto waiting = std::async(std::launch::async, [&waiter = *waiter]() -> std::error_code {
    try {
      return waiter.try_lock_for(20s) ? std::error_code() : make_error_code(errc::timed_out);
    } catch (const Error& e) {
      return e.code();
    }
  });
  ASSERT_TRUE(someone_waits("/x"));
  waiter.reset();
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(waiting.get(), errc::cancelled);
  LockStatus status = backend_->status("/x");
  for (int polls = 0; polls < 500 && !status.waiters.empty(); ++polls) {
    std::this_thread::sleep_for(10ms);
    status = backend_->status("/x");
  }
  EXPECT_TRUE(status.waiters.empty());
}

// Lock files once took mode 0600 and directories 0700 whatever the umask: another user failed
// every lock and every status in a directory shared through its group.
TEST_F(FileBackendTest, UsersOfTheDirectorysGroupShareItsLocksAndOthersReadStatus) {
  if (geteuid() != 0) GTEST_SKIP() << "acting as other users needs root";
  constexpr gid_t kGroup = 65534;
  const User member{65534, kGroup}, outsider{65533, 65533};
  backend_.reset();
  ASSERT_EQ(0, chown(dir_.c_str(), 0, kGroup));
  ASSERT_EQ(0, chmod(dir_.c_str(), 02775));
  struct Umask {
    mode_t before = umask(002);
    ~Umask() { umask(before); }
  } group_writable;
  const Child waits = fork_child(
      [](std::shared_ptr<file::Backend> backend) {
        const LockStatus seen = backend->status("/shared");
        Mutex m(std::move(backend), "/shared");
        return seen.holders.size() == 1 && m.try_lock_for(20s) &&
               m.token() > seen.holders.front().token;
      },
      member);
  const Child reads = fork_child(
      [this](std::shared_ptr<file::Backend> backend) {
        if (backend->status("/shared").holders.size() != 1) return false;
        // Nor may it open a file that is locked: flock needs no write access, and its hold
        // would stop every locker.
        if (::open((dir_ + "/shared/.lock").c_str(), O_RDONLY) >= 0 || errno != EACCES) {
          return false;
        }
        try {
          Mutex(std::move(backend), "/shared").try_lock();
        } catch (const Error& e) {
          return e.code() == errc::permission_denied;
        }
        return false;
      },
      outsider);
  ASSERT_GT(waits.pid, 0);
  ASSERT_GT(reads.pid, 0);
  backend_ = file::Backend::open({.directory = dir_});
  Mutex held(backend_, "/shared");
  ASSERT_TRUE(held.try_lock());
  reads.go();
  EXPECT_EQ(0, reads.wait()) << "a user outside the group could not read status, or locked";
  waits.go();
  EXPECT_TRUE(someone_waits("/shared")) << "a user of the group could not queue";
  held.unlock();
  EXPECT_EQ(0, waits.wait()) << "a user of the group could not take the lock after root";
}

TEST_F(FileBackendTest, SemaphoreAdmitsPermitsHolders) {
  Semaphore a(backend_, "/pool", 2), b(backend_, "/pool", 2), c(backend_, "/pool", 2);
  ASSERT_TRUE(a.try_lock());
  ASSERT_TRUE(b.try_lock());
  EXPECT_FALSE(c.try_lock());
  EXPECT_EQ(2u, backend_->status("/pool").holders.size());
  a.unlock();
  EXPECT_TRUE(c.try_lock());
  Semaphore wrong(backend_, "/pool", 3);
  try {
    wrong.try_lock();
    FAIL() << "permits that disagree were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(make_error_code(errc::lock_mismatch), e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("2 permits")) << e.what();
  }
}

// A semaphore and a mutex never share a name; once nobody uses it, its kind may change, and
// so may a semaphore's permits.
TEST_F(FileBackendTest, AnotherKindOfLockOnTheNameIsRefusedUntilItIsFree) {
  const auto refused = [](auto& handle, const std::string& found) {
    try {
      (void)handle.try_lock();
      ADD_FAILURE() << "two kinds of lock held one name";
    } catch (const Error& e) {
      EXPECT_EQ(make_error_code(errc::lock_mismatch), e.code()) << e.what();
      EXPECT_NE(std::string::npos, std::string(e.what()).find(found)) << e.what();
    }
  };
  {
    Semaphore pool(backend_, "/k", 2);
    ASSERT_TRUE(pool.try_lock());
    Mutex mutex(backend_, "/k");
    refused(mutex, "in use as a semaphore");
    SharedMutex rw(backend_, "/k");
    refused(rw, "in use as a semaphore");
    EXPECT_THROW((void)rw.try_lock_shared(), Error);
  }
  Mutex mutex(backend_, "/k");
  ASSERT_TRUE(mutex.try_lock());
  Semaphore pool(backend_, "/k", 3);
  refused(pool, "not a semaphore");
  mutex.unlock();
  EXPECT_TRUE(pool.try_lock());
}

// A name with a component too long for a file name is refused before anything is created.
TEST_F(FileBackendTest, AComponentTooLongLeavesNoDirectory) {
  try {
    Mutex mutex(backend_, "/parent/" + std::string(256, 'c'));
    (void)mutex.try_lock();
    ADD_FAILURE() << "a 256-byte component was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(make_error_code(errc::invalid_path), e.code()) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/parent"));
}

// status and list of a directory that does not exist yet made it (a typo left one behind); the
// first lock makes it.
TEST_F(FileBackendTest, OnlyALockMakesAMissingDirectory) {
  const std::string missing = dir_ + "/not/yet";
  const auto backend = file::Backend::open({.directory = missing});
  EXPECT_TRUE(backend->status("/a").holders.empty());
  EXPECT_TRUE(backend->list("/").empty());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/not"));
  Mutex mutex(backend, "/a");
  ASSERT_TRUE(mutex.try_lock());
  EXPECT_EQ(1u, backend->status("/a").holders.size());
}

TEST_F(FileBackendTest, TokensIncreasePerLock) {
  Mutex m(backend_, "/tokens");
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    std::lock_guard guard(m);
    EXPECT_GT(m.token(), last);
    last = m.token();
  }
}

// A counter lost (with a tmpfs at a reboot, to a cleaner of old files) starts again above the
// tokens before it, not at 1, where a fenced resource would refuse every later holder (found
// by a review).
TEST_F(FileBackendTest, TokensKeepGrowingWhenTheCounterIsLost) {
  Mutex m(backend_, "/lost-counter");
  m.lock();
  const std::uint64_t before = m.token();
  m.unlock();
  ASSERT_TRUE(std::filesystem::remove(dir_ + "/lost-counter/.token"));
  m.lock();
  EXPECT_GT(m.token(), before);
  m.unlock();
}

// A counter at 2^64-1 (dlock never writes one; another program or a corruption did) would
// wrap to 0 and let the clock step the tokens down: the take fails instead, holding nothing.
TEST_F(FileBackendTest, ACounterAtTheLargestTokenFailsTheTake) {
  Mutex m(backend_, "/full-counter");
  m.lock();
  m.unlock();
  {
    std::ofstream counter(dir_ + "/full-counter/.token", std::ios::trunc);
    counter << std::numeric_limits<std::uint64_t>::max() << "\n";
  }
  try {
    m.lock();
    ADD_FAILURE() << "took a token past the largest, " << m.token();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::backend_failure) << error.what();
  }
  EXPECT_TRUE(backend_->status("/full-counter").holders.empty());
  ASSERT_TRUE(std::filesystem::remove(dir_ + "/full-counter/.token"));
  EXPECT_TRUE(m.try_lock()) << "the failed take left the lock held";
  m.unlock();
}

TEST_F(FileBackendTest, DeadlineAndCancellation) {
  Mutex holder(backend_, "/wait"), waiter(backend_, "/wait");
  holder.lock();
  const auto start = Clock::now();
  EXPECT_FALSE(waiter.try_lock_for(200ms));
  EXPECT_GE(Clock::now() - start, 200ms);
  EXPECT_LT(Clock::now() - start, 5s);  // returned, not hung

  std::stop_source stop;
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);  // the waiter is queued by then (or cancels at once)
    stop.request_stop();
  });
  try {
    waiter.lock(stop.get_token());
    FAIL() << "lock() returned although cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(make_error_code(errc::cancelled), e.code());
  }
  canceller.join();
  // A waiter blocked in lock() gets it when the holder lets go.
  std::thread release([&] {
    std::this_thread::sleep_for(50ms);
    holder.unlock();
  });
  waiter.lock();
  release.join();
  EXPECT_TRUE(waiter.owns_lock());
}

TEST_F(FileBackendTest, StatusShowsHolderAndWaiters) {
  Mutex holder(backend_, "/s", {.label = "first"});
  holder.lock();
  Mutex waiter(backend_, "/s", {.label = "second"});
  std::thread waiting([&] { waiter.lock(); });
  LockStatus status;
  for (int i = 0; i < 500 && status.waiters.empty(); ++i) {
    status = backend_->status("/s");
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(1u, status.holders.size());
  ASSERT_EQ(1u, status.waiters.size());
  EXPECT_EQ("first", status.holders[0].label);
  EXPECT_EQ(holder.token(), status.holders[0].token);
  EXPECT_EQ("second", status.waiters[0].label);
  EXPECT_EQ(getpid(), status.waiters[0].pid);
  holder.unlock();
  waiting.join();
  EXPECT_EQ("second", backend_->status("/s").holders.at(0).label);
}

// A process killed between creating its record's temporary file and renaming it leaves the
// file behind (a hostile probe's kill -9): the next reading of the directory removes it, once
// it is older than a publisher could still be working on and nobody has it locked.
TEST_F(FileBackendTest, ATemporaryRecordLeftByAKilledPublisherIsRemoved) {
  Mutex mutex(backend_, "/t");
  mutex.lock();
  const std::string holders = dir_ + "/t/.holders/";
  const auto plant = [&](const std::string& name, std::chrono::seconds age) {
    std::ofstream(holders + name) << "{}";
    const timespec then{.tv_sec = std::time(nullptr) - age.count(), .tv_nsec = 0};
    const timespec times[2] = {then, then};
    EXPECT_EQ(0, utimensat(AT_FDCWD, (holders + name).c_str(), times, 0));
  };
  plant(".new-1-0", 120s);  // abandoned
  plant(".new-1-1", 0s);    // may be a publisher's, about to lock it
  plant(".new-1-2", 120s);  // locked: a publisher's, stopped
  const int locked = ::open((holders + ".new-1-2").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(0, flock(locked, LOCK_EX));
  EXPECT_EQ(1u, backend_->status("/t").holders.size());
  EXPECT_FALSE(std::filesystem::exists(holders + ".new-1-0"));
  EXPECT_TRUE(std::filesystem::exists(holders + ".new-1-1"));
  EXPECT_TRUE(std::filesystem::exists(holders + ".new-1-2"));
  close(locked);
}

TEST_F(FileBackendTest, NamesAreEscapedAndListed) {
  for (const char* name : {"/a/b", "/a/.hidden", "/a/100%", "/a", "/z"}) {
    Mutex m(backend_, name);
    ASSERT_TRUE(m.try_lock()) << name;
  }
  EXPECT_EQ((std::vector<std::string>{"/a", "/a/.hidden", "/a/100%", "/a/b", "/z"}),
            backend_->list("/"));
  EXPECT_EQ((std::vector<std::string>{"/a", "/a/.hidden", "/a/100%", "/a/b"}),
            backend_->list("/a"));
  EXPECT_EQ((std::vector<std::string>{"/a/b"}), backend_->list("/a/b"));
  EXPECT_TRUE(backend_->list("/none").empty());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/a/%2Ehidden/.lock"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/a/100%25/.lock"));
}

TEST_F(FileBackendTest, InvalidNamesAndDirectories) {
  EXPECT_THROW(Mutex(backend_, "relative"), Error);
  EXPECT_THROW(Mutex(backend_, "/a/../b"), Error);
  EXPECT_THROW(file::Backend::open({.directory = "relative/dir"}), Error);
  try {
    file::Backend::open({.directory = "/proc/version/x"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("/proc/version")) << e.what();
  }
}

TEST(OpenTest, UrlsAndDurations) {
  EXPECT_EQ(std::chrono::milliseconds(500), parse_duration("500ms"));
  EXPECT_EQ(std::chrono::milliseconds(1500), parse_duration("1.5s"));
  EXPECT_EQ(std::chrono::milliseconds(2500), parse_duration("2.5"));
  EXPECT_EQ(std::chrono::minutes(5), parse_duration("5m"));
  EXPECT_EQ(std::chrono::hours(1), parse_duration("1h"));
  for (const char* bad : {"", "s", "-1s", "1x", "1.2.3s", "1e9999"}) {
    EXPECT_THROW(parse_duration(bad), Error) << bad;
  }
  const zk::Options options =
      parse_zk_url("zk://u:p@h1:2181,h2:2182/app/x?session_timeout=3s&connect_timeout=500ms");
  EXPECT_EQ("h1:2181,h2:2182", options.hosts);
  EXPECT_EQ("/app/x", options.chroot);
  EXPECT_EQ(std::chrono::seconds(3), options.session_timeout);
  EXPECT_EQ(std::chrono::milliseconds(500), options.connect_timeout);
  EXPECT_EQ(std::vector<std::string>{"u:p"}, options.digest_auth);
  EXPECT_EQ("", parse_zk_url("zk://h:1").chroot);
  EXPECT_EQ("", parse_zk_url("zk://h:1/").chroot);

  const auto code_of = [](const char* url) {
    try {
      open(url);
    } catch (const Error& e) {
      return e.code();
    }
    return std::error_code();
  };
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("nonsense"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("gopher://x"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("zk://"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("zk://h:1?bogus=1"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("file://elsewhere/x"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("redis://h:1?bogus=1"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("mysql://db/x"));  // no user
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("redlock://h:1,h:1"));
  // Refused before any connection is tried.
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("postgres://db/x?heartbeat=soon"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("postgres://db/x?no_such=1"));
  EXPECT_EQ(make_error_code(errc::invalid_argument), code_of("postgres://db/x?schema=a;b"));
  EXPECT_EQ("file", open("file:")->scheme());
  EXPECT_EQ(file::default_directory(),
            std::dynamic_pointer_cast<file::Backend>(open("file://"))->directory());
}

// Sets XDG_RUNTIME_DIR for one test and puts back what was there.
class RuntimeDirectoryVariable {
 public:
  RuntimeDirectoryVariable() {
    if (const char* value = std::getenv(kName)) saved_ = value;
  }
  ~RuntimeDirectoryVariable() {
    if (saved_) {
      ::setenv(kName, saved_->c_str(), 1);
    } else {
      ::unsetenv(kName);
    }
  }
  std::string default_with(const std::string& value) const {
    ::setenv(kName, value.c_str(), 1);
    return file::default_directory();
  }

 private:
  static constexpr const char* kName = "XDG_RUNTIME_DIR";
  std::optional<std::string> saved_;
};

// The default directory is under XDG_RUNTIME_DIR only if that is an existing directory of this
// user's, as the XDG spec has it: a stale value (a cron job's, after logout) was created with
// all its parents, under what a login manager later mounts.
TEST_F(FileBackendTest, TheDefaultDirectoryUsesOnlyARuntimeDirectoryThatIsOurs) {
  const RuntimeDirectoryVariable variable;
  const std::string fallback = "/tmp/dlock-" + std::to_string(::geteuid());
  EXPECT_EQ(dir_ + "/dlock", variable.default_with(dir_));
  EXPECT_EQ(fallback, variable.default_with(dir_ + "/gone/run/user/0"));
  std::ofstream(dir_ + "/plain") << "a file";
  EXPECT_EQ(fallback, variable.default_with(dir_ + "/plain"));
  // Another user's: as root, a directory given to nobody (where the id is mapped); else "/".
  const std::string others = dir_ + "/others";
  std::filesystem::create_directory(others);
  if (::geteuid() != 0) {
    EXPECT_EQ(fallback, variable.default_with("/"));
  } else if (::chown(others.c_str(), 65534, 65534) == 0) {
    EXPECT_EQ(fallback, variable.default_with(others));
  }
  variable.default_with(dir_ + "/gone/run/user/0");
  file::Backend::open({});
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/gone"));
}

// A lock recreated a default directory that a cleaner of /tmp had removed, with the modes of a
// named one and unchecked, and used one someone else made again (found by two reviews): it
// fails instead, and makes nothing.
TEST_F(FileBackendTest, ALockDoesNotRemakeARemovedDefaultDirectory) {
  const RuntimeDirectoryVariable variable;
  const std::string private_dir = variable.default_with(dir_);
  auto backend = file::Backend::open({});
  ASSERT_EQ(private_dir, backend->directory());
  std::filesystem::remove_all(private_dir);
  Mutex mutex(backend, "/a");
  EXPECT_THROW(mutex.try_lock(), Error);
  EXPECT_FALSE(std::filesystem::exists(private_dir));
  // Made again by someone else (as root: given to nobody): refused, and nothing made in it.
  if (geteuid() != 0) return;
  std::filesystem::create_directory(private_dir);
  ASSERT_EQ(0, chown(private_dir.c_str(), 65534, 65534));
  try {
    mutex.try_lock();
    ADD_FAILURE() << "locked in a directory another user made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::permission_denied) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(private_dir));
}

}  // namespace
}  // namespace dlock
