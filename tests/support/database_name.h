// Names for the databases a test makes on a shared PostgreSQL or MariaDB server.
#ifndef DLOCK_TESTS_SUPPORT_DATABASE_NAME_H_
#define DLOCK_TESTS_SUPPORT_DATABASE_NAME_H_

#include <string>

namespace dlock::test {

// A database name unique to the current test: dlock_<suite>_<test>_<pid>_<n>, lower case, every
// character outside [a-z0-9_] replaced by '_', at most 63 bytes (PostgreSQL's limit, under
// MariaDB's 64), so that one name serves both servers.
std::string unique_database();

}  // namespace dlock::test

#endif  // DLOCK_TESTS_SUPPORT_DATABASE_NAME_H_
