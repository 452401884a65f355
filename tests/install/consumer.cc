// Builds against an installed dlock; run without arguments it only checks the link and that
// the library it loads has the version of the headers it was built with.
#include <cstring>
#include <iostream>

#include <dlock/dlock.h>

int main(int argc, char** argv) {
  if (std::strcmp(dlock::version(), DLOCK_VERSION_STRING) != 0) {
    std::cerr << "headers " << DLOCK_VERSION_STRING << ", library " << dlock::version() << "\n";
    return 1;
  }
  if (argc < 2) return dlock::make_error_code(dlock::errc::timed_out) ? 0 : 1;
  auto session = dlock::zk::Session::connect({.hosts = argv[1]});
  dlock::Mutex mutex(session, "/consumer/lock");
  std::lock_guard guard(mutex);
  std::cout << "token " << mutex.token() << "\n";
}
