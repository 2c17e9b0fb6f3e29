// Waiting on the fiber for a registered socket to become ready, with or without a deadline: the
// one wait behind SocketWatch (a call's own registration) and KeptSocketWatch (a pooled
// connection's). Internal to common/fiber; includes Asio.
#pragma once

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>

namespace rr::fiber {

// Suspends the running fiber until `descriptor` is ready for `type`, or until `deadline`, whose
// timer then cancels the wait; time_point::max() arms no timer (two SQL waits per request that
// would schedule and cancel nothing). False when the deadline passed first; otherwise true, with
// the wait's own error, if any, in `ec`.
bool wait_until_ready(boost::asio::posix::stream_descriptor& descriptor,
                      boost::asio::posix::descriptor_base::wait_type type,
                      std::chrono::steady_clock::time_point deadline, boost::system::error_code& ec);

}  // namespace rr::fiber
