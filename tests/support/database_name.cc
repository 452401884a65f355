#include "database_name.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>

namespace dlock::test {

std::string unique_database() {
  static std::atomic<int> counter{0};
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "dlock_";
  if (test != nullptr) name += std::string(test->test_suite_name()) + "_" + test->name() + "_";
  name += std::to_string(::getpid()) + "_" + std::to_string(counter.fetch_add(1));
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = '_';
  }
  // The unique tail matters most: keep it when the name is too long for PostgreSQL.
  if (name.size() > 63) name = name.substr(name.size() - 63);
  if (name.front() >= '0' && name.front() <= '9') name.front() = 'd';
  return name;
}

}  // namespace dlock::test
