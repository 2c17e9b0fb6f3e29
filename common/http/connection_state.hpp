// The states of one server connection and the moves allowed between them, in one place: the
// connection (connection*.cpp) changes state only through this table, and a debug build stops on
// any move it does not list.
//
//   (accepted) ──► between_requests
//   between_requests ── nothing read ahead ──► awaiting_request ── first bytes ──► reading_request
//   between_requests ── bytes read ahead (pipelined) ──────────────────────────► reading_request
//   between_requests ── the balance asks ──► moving ── arrived on the new thread ──► between_requests
//   reading_request ── whole request ──► handling ── its answer ──► writing_answer
//   writing_answer ── written, keep-alive ──► between_requests
//   reading_request ── 4xx found while reading ──► refusing ── written ──► lingering ── drained ──► closed
//   any state but closed ── peer gone, timeout, error, the last answer written, stop ──► closed
//
// awaiting_request is timed by the I/O thread's idle sweep (keep-alive idle timeout, or the read
// timeout from accept); reading_request by the read timeout; writing by the write timeout. Closed is
// final. A request cut short while reading (EOF, reset, timeout) has nobody to answer and closes; a
// whole request goes to handling even when the triage answers it at once, so every answer is written
// from writing_answer. The connection never reads while handling or writing (pipelined answers stay
// in order) and moves only between two requests, with nothing of its own pending on the socket.
#pragma once

#include <cstdint>
#include <string_view>

namespace rr::http {

enum class ConnectionState : std::uint8_t {
  between_requests,  // just accepted, answered with keep-alive, or just moved: nothing pending
  awaiting_request,  // waiting for a request's first byte (keep-alive idling), in the idle sweep
  reading_request,   // a request's head or body is arriving (or "100 Continue" is being written)
  handling,          // the whole request is with the triage or a handler; counted in flight
  writing_answer,    // its answer is being written; still counted in flight
  refusing,          // writing the 4xx for a request found bad while reading; the last answer
  lingering,         // the send side is shut; draining what the client still sends, then closing
  moving,            // the socket is on its way to another I/O thread (between two requests)
  closed,            // final
};

std::string_view state_name(ConnectionState state);

// The table: true when a connection in `from` may go to `to`.
constexpr bool transition_allowed(ConnectionState from, ConnectionState to) {
  using S = ConnectionState;
  if (from == S::closed) return false;
  if (to == S::closed) return true;
  switch (from) {
    case S::between_requests:
      return to == S::awaiting_request || to == S::reading_request || to == S::moving;
    case S::awaiting_request:
      return to == S::reading_request;
    case S::reading_request:
      return to == S::handling || to == S::refusing;
    case S::handling:
      return to == S::writing_answer;
    case S::writing_answer:
      return to == S::between_requests;
    case S::refusing:
      return to == S::lingering;
    case S::moving:
      // On the new thread; or on this one, when the socket could not be moved but is still ours.
      return to == S::between_requests;
    case S::lingering:
    case S::closed:
      return false;
  }
  return false;
}

}  // namespace rr::http
