// dlock::SharedMutex: readers share the lock, a writer excludes everyone.
//
// Shows std::shared_lock and std::unique_lock on one path, timed attempts on both sides, and
// downgrade(): a writer keeps reading what it wrote without letting a queued writer in.
//
//   dlock-example-shared-mutex [URL]    URL: file: (default), file:///dir, zk://host:port/chroot
#include <chrono>
#include <iostream>
#include <mutex>
#include <shared_mutex>

#include "example.h"

using namespace std::chrono_literals;

namespace {

void show_shared_mutex(std::shared_ptr<dlock::Backend> backend) {
  // Three handles on one path contend as three processes would.
  dlock::SharedMutex reader(backend, "/examples/catalog", {.label = "reader"});
  dlock::SharedMutex other_reader(backend, "/examples/catalog", {.label = "other reader"});
  dlock::SharedMutex writer(backend, "/examples/catalog", {.label = "writer"});
  {
    std::shared_lock reading(reader);
    std::shared_lock also_reading(other_reader, 5s);  // try_lock_shared_for underneath
    example::expect(also_reading.owns_lock(), "two readers at once");
    example::expect(!writer.try_lock_for(200ms), "the writer to wait while readers read");
  }
  {
    std::unique_lock writing(writer, 5s);
    example::expect(writing.owns_lock(), "the writer to get in once the readers left");
    example::expect(!reader.try_lock_shared_for(200ms), "readers to wait while the writer writes");
  }

  writer.lock();
  try {
    writer.downgrade();
    example::expect(writer.owns_shared(), "the writer to read on after downgrade()");
    example::expect(reader.try_lock_shared(), "other readers to join a downgraded writer");
    reader.unlock_shared();
    writer.unlock_shared();
    std::cout << "readers shared, the writer excluded them, then downgraded\n";
  } catch (const dlock::Error& e) {
    // Only ZooKeeper turns a write lock into a read lock in place; the other backends say
    // not_supported (a file lock is one flock per contender, a Redis or SQL writer's lock is
    // not a reader's).
    if (e.code() != dlock::errc::not_supported) throw;
    writer.unlock();
    std::cout << "readers shared, the writer excluded them (downgrade: " << e.what() << ")\n";
  }
}

}  // namespace

int main(int argc, char** argv) { return example::run(argc, argv, show_shared_mutex); }
