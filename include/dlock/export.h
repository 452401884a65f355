// DLOCK_EXPORT marks the library's public API. The library is built with hidden visibility, so
// a shared libdlock exports these names and nothing of its internals.
#ifndef DLOCK_EXPORT_H_
#define DLOCK_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define DLOCK_EXPORT __attribute__((visibility("default")))
#else
#define DLOCK_EXPORT
#endif

#endif  // DLOCK_EXPORT_H_
