// Running an exchange: on a blocking caller's private io_context (run_for up to the deadline), or
// on a request fiber's I/O thread, the fiber suspended until the coroutine has finished, a timer
// on the same thread cancelling the connection at the deadline.
#include "common/http/client_session.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <type_traits>

#include "common/fiber/fiber_context.hpp"

namespace rr::http {
namespace {

namespace asio = boost::asio;
using error_code = boost::system::error_code;
using detail::ExchangeState;

[[noreturn]] void throw_timed_out(const std::string& what, std::chrono::milliseconds timeout,
                                  const ExchangeState& state) {
  throw TransportError(what + ": timed out after " + std::to_string(timeout.count()) + " ms during " + state.step,
                       true);
}

[[noreturn]] void throw_failure(std::exception_ptr failure, const std::string& what, const ExchangeState& state) {
  try {
    std::rethrow_exception(failure);
  } catch (const boost::system::system_error& e) {
    throw TransportError(what + ": " + state.step + ": " + e.code().message(), false);
  } catch (const std::exception& e) {
    throw TransportError(what + ": " + state.step + ": " + e.what(), false);
  }
}

}  // namespace

Client::Session::Session(std::string origin, bool tls)
    : origin(std::move(origin)),
      own_context(std::make_unique<asio::io_context>()),
      executor(own_context->get_executor()),
      connection(executor, tls) {}

Client::Session::Session(std::string origin, bool tls, asio::any_io_executor fiber_executor)
    : origin(std::move(origin)),
      executor(std::move(fiber_executor)),
      home(&asio::query(executor, asio::execution::context)),
      connection(executor, tls) {}

ClientResponse Client::Session::run(const detail::Url& url, const detail::OutgoingRequest& request,
                                    const std::string& what, std::chrono::milliseconds timeout, ExchangeState& state) {
  return own_context ? run_blocking(url, request, what, timeout, state)
                     : run_on_fiber(url, request, what, timeout, state);
}

ClientResponse Client::Session::run_blocking(const detail::Url& url, const detail::OutgoingRequest& request,
                                             const std::string& what, std::chrono::milliseconds timeout,
                                             ExchangeState& state) {
  auto& ioc = *own_context;
  bool done = false;
  std::exception_ptr failure;
  ClientResponse response;
  ioc.restart();
  auto on_done = [&](std::exception_ptr error, ClientResponse result) {
    done = true;
    failure = error;
    response = std::move(result);
  };
  if (used) {
    asio::co_spawn(ioc, detail::exchange_again(connection, request, state), on_done);
  } else {
    asio::co_spawn(ioc, detail::exchange(connection, url, request, state), on_done);
  }
  used = true;
  ioc.run_for(timeout);
  if (!done) {
    // The deadline passed: abort whichever step is pending and let the coroutine unwind.
    connection.cancel();
    ioc.restart();
    ioc.run();
    state.reusable = false;
    throw_timed_out(what, timeout, state);
  }
  if (failure) {
    state.reusable = false;
    throw_failure(failure, what, state);
  }
  return response;
}

// After the exchange on a fiber: the deadline disarmed, and the answer, a timeout or the failure.
ClientResponse Client::Session::finish_on_fiber(ClientResponse response, std::exception_ptr failure, Deadline& deadline,
                                                asio::steady_timer& timer, const std::string& what,
                                                std::chrono::milliseconds timeout, ExchangeState& state) {
  deadline.finished = true;
  timer.cancel();
  if (deadline.passed) {
    state.reusable = false;  // closed by the cancellation, even if the answer made it first
    if (failure) throw_timed_out(what, timeout, state);
  }
  if (failure) {
    state.reusable = false;
    throw_failure(failure, what, state);
  }
  return response;
}

ClientResponse Client::Session::run_on_fiber(const detail::Url& url, const detail::OutgoingRequest& request,
                                             const std::string& what, std::chrono::milliseconds timeout,
                                             ExchangeState& state) {
  // The timer's handler may already be queued when the exchange ends; the shared flags let it see
  // that and leave this session (maybe carrying the next request by then) alone. Handlers and
  // the fiber run on the same I/O thread, one at a time.
  auto deadline = std::make_shared<Deadline>();
  asio::steady_timer timer(executor, timeout);
  timer.async_wait([deadline, this](error_code ec) {
    if (ec || deadline->finished) return;
    deadline->passed = true;
    connection.cancel();
  });

  bool again = used;
  used = true;
  std::exception_ptr failure;
  ClientResponse response;
  if (again && !connection.secure) {
    // A kept plain connection (the provider's, call after call): the round trip on the fiber itself.
    try {
      response = detail::round_trip_on_fiber(connection.plain, request, state);
    } catch (...) {
      failure = std::current_exception();
    }
    return finish_on_fiber(std::move(response), failure, *deadline, timer, what, timeout, state);
  }
  // The fiber resumes when the coroutine has ended, cancelled or not: the connection and the
  // request it refers to are never left to a coroutine still running. (Completing co_spawn
  // straight into the yield context, with its (exception_ptr, T) signature, does not compile
  // with Boost 1.81's spawn; the result comes through these locals instead.)
  fiber::suspended([&](auto& yield) {
    asio::async_initiate<std::remove_reference_t<decltype(yield)>, void()>(
        [&](auto resume) {
          auto on_done = [&failure, &response, resume = std::move(resume)](std::exception_ptr error,
                                                                           ClientResponse result) mutable {
            failure = error;
            response = std::move(result);
            std::move(resume)();
          };
          if (again) {
            asio::co_spawn(executor, detail::exchange_again(connection, request, state), std::move(on_done));
          } else {
            asio::co_spawn(executor, detail::exchange(connection, url, request, state), std::move(on_done));
          }
        },
        yield);
  });
  return finish_on_fiber(std::move(response), failure, *deadline, timer, what, timeout, state);
}

}  // namespace rr::http
