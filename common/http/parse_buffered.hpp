// Feeding a Beast parser from bytes already read, as Beast's own reads do, without an asynchronous
// read that would only complete at once: the server parses a request that arrived whole this way,
// and the client on a request fiber parses the provider's answer. Only for translation units that
// include Beast anyway.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>

namespace rr::http {

// Puts `buffer`'s bytes into `parser` (consuming what it took) up to the end of the head or, with
// `whole`, of the message. True when that end or an error (in `ec`) was reached; false when the
// parser needs bytes that have not arrived yet (`ec` clear).
//
// A chunked body's bytes wait in the buffer while fewer than five are there. Its end needs its last
// chunk, at least "0\r\n\r\n", all in the buffer at once (Beast consumes nothing of a last chunk until
// the blank line that ends it), so fewer can never finish the message. And Boost 1.81's Beast
// asserts that a last chunk it answered need_more to comes back with at least five bytes; "0\r\n"
// then "\r" gives it four and a debug build aborts (fixed in Boost 1.86, boostorg/beast#2861).
template <typename Parser>
bool parse_buffered(boost::beast::flat_buffer& buffer, Parser& parser, bool whole, boost::system::error_code& ec) {
  constexpr std::size_t kShortestLastChunk = 5;
  parser.eager(whole);
  while (whole ? !parser.is_done() : !parser.is_header_done()) {
    if (buffer.size() == 0) return false;
    if (buffer.size() < kShortestLastChunk && parser.is_header_done() && parser.chunked()) return false;
    buffer.consume(parser.put(buffer.data(), ec));
    if (ec == boost::beast::http::error::need_more) {
      ec = {};
      return false;
    }
    if (ec) return true;
  }
  return true;
}

}  // namespace rr::http
