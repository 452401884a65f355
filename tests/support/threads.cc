#include "threads.h"

#include <fstream>
#include <string>

namespace dlock::test {

int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
  }
  return -1;
}

}  // namespace dlock::test
