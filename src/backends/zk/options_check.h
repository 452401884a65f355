// The checks a zk::Session's options pass before any connection is tried: a bad host, port or
// timeout is refused with a message naming it, never discovered by a connection that can only
// time out (or, for a 1 ms session timeout, by thousands of connections a second).
#ifndef DLOCK_SRC_BACKENDS_ZK_OPTIONS_CHECK_H_
#define DLOCK_SRC_BACKENDS_ZK_OPTIONS_CHECK_H_

#include <dlock/zk/session.h>

namespace dlock::zk_backend {

// Throws dlock::Error(invalid_argument) naming what is wrong: no hosts, a '/' in the hosts, a
// chroot that is no lock path, a host that is not host:port with a port from 1 to 65535, a
// timeout that is not positive, a session timeout outside 1 s to 24 h.
void check_options(const zk::Options& options);

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_OPTIONS_CHECK_H_
