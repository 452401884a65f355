// The context of a dlock::Error: its what() without the code's message that Error appends, for
// an error that becomes part of another's message (which appends its own code's message).
#ifndef DLOCK_SRC_CORE_ERROR_CONTEXT_H_
#define DLOCK_SRC_CORE_ERROR_CONTEXT_H_

#include <string>

#include <dlock/error.h>

namespace dlock::detail {

std::string context_of(const Error& error);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_ERROR_CONTEXT_H_
