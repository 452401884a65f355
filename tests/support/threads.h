// What a test sees of its own process's threads.
#ifndef DLOCK_TESTS_SUPPORT_THREADS_H_
#define DLOCK_TESTS_SUPPORT_THREADS_H_

namespace dlock::test {

// The threads this process runs now (/proc/self/status), or -1 if that cannot be read.
int thread_count();

}  // namespace dlock::test

#endif  // DLOCK_TESTS_SUPPORT_THREADS_H_
