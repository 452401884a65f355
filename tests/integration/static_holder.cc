// A program that holds a lock through a handle with static storage, as a function-local static
// of a program's own may be, and returns from main holding it: the release runs as the process
// exits, after statics made later than the handle, and exit handlers registered later, are
// gone.
//   static_holder URL PATH
#include <exception>
#include <iostream>

#include <dlock/dlock.h>

namespace {

dlock::Mutex& job_lock(const char* url, const char* path) {
  static dlock::Mutex mutex(dlock::open(url), path);
  return mutex;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: static_holder URL PATH\n";
    return 2;
  }
  try {
    job_lock(argv[1], argv[2]).lock();
  } catch (const std::exception& e) {
    std::cerr << "static_holder: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
