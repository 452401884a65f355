// Builds against an installed dlock; run without arguments it only checks the link.
#include <iostream>

#include <dlock/dlock.h>

int main(int argc, char** argv) {
  if (argc < 2) return dlock::make_error_code(dlock::errc::timed_out) ? 0 : 1;
  auto session = dlock::zk::Session::connect({.hosts = argv[1]});
  dlock::Mutex mutex(session, "/consumer/lock");
  std::lock_guard guard(mutex);
  std::cout << "token " << mutex.token() << "\n";
}
