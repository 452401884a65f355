// What every example shares: the backend comes from the command line, so one program runs on
// the file backend and on ZooKeeper, and a failed expectation ends the program with a message
// and exit status 1, so that the tests running the examples notice.
#ifndef DLOCK_EXAMPLES_EXAMPLE_H_
#define DLOCK_EXAMPLES_EXAMPLE_H_

#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include <dlock/dlock.h>

namespace example {

inline void expect(bool holds, const std::string& what) {
  if (!holds) throw std::runtime_error("expected " + what);
}

// Opens the backend named by argv[1] ("file:" without one) and runs `show` on it. Returns the
// exit status for main().
inline int run(int argc, char** argv,
               const std::function<void(std::shared_ptr<dlock::Backend>)>& show) {
  try {
    show(dlock::open(argc > 1 ? argv[1] : "file:"));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace example

#endif  // DLOCK_EXAMPLES_EXAMPLE_H_
