// Routes the ZooKeeper C client's log lines to the sessions' Options::log callbacks.
//
// The C client's log level is process-wide and its log callback gets no context, so lines
// cannot be told apart by session: every registered sink sees every line at or above its own
// level. With no sink registered the client is silent.
#ifndef DLOCK_SRC_ZK_LOG_ROUTER_H_
#define DLOCK_SRC_ZK_LOG_ROUTER_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include <dlock/zk/types.h>

namespace dlock::zk::log_router {

using Sink = std::function<void(LogLevel, std::string_view)>;

// Returns an id for remove(); a sink with an empty function is not registered (returns 0).
std::uint64_t add(Sink sink, LogLevel level);
void remove(std::uint64_t id);

// The C client's log callback.
void forward(const char* message);

}  // namespace dlock::zk::log_router

#endif  // DLOCK_SRC_ZK_LOG_ROUTER_H_
