// Compiled into the library, so it reports the headers the library was built with, not those of
// the program calling it.
#include <dlock/version.h>

namespace dlock {

const char* version() noexcept { return DLOCK_VERSION_STRING; }

}  // namespace dlock
