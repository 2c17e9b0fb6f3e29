// Beast's HTTP/1 request parser (its framing, limits and syntax checks, unchanged) writing the
// request straight into an rr::http::Request. Beast's own parser fills a fields container of its
// own, one allocation per field, which the server then copied field by field into a Request; here
// each part is written once, and a Request that the connection keeps from one request to the next
// reuses its strings' storage, so a request answered on the I/O thread allocates nothing for its
// head. Only for translation units that include Beast anyway.
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <cstddef>
#include <cstdint>

#include "common/http/message.hpp"

namespace rr::http {

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  // Parses into `into`, which must outlive the parser. Its method, target, path, query, headers
  // and body are replaced (their storage kept); remote_address is left as it is; admission,
  // wait_deadline and wait_place are cleared.
  explicit RequestParser(Request& into);

  // The request was a HEAD, which `into` holds as a GET (RFC 9110 section 9.3.2: HEAD is GET
  // without the body; handlers see GET and the server leaves the body out).
  bool head_request() const { return head_request_; }
  // 10 for HTTP/1.0, 11 for HTTP/1.1.
  unsigned version() const { return version_; }
  // A field was folded over lines (obs-fold, RFC 9112 section 5.2). Beast joins the lines with a
  // space; a proxy may keep them apart or cut the field, so the request is refused instead.
  bool folded_field() const { return folded_field_; }

  // The trailer of a chunked body (RFC 9112 section 7.1.2). Beast hands its fields to the same
  // callback as the header's; they are counted and checked here, never added to the request's
  // headers: RFC 9110 section 6.5 forbids merging a trailer field into the header section unless
  // its definition allows it, and none we read does. Otherwise a field sent after the body (where
  // framing checks and proxies no longer look) could authenticate, key, attribute or log a request.
  std::size_t trailer_fields() const { return trailer_fields_; }
  bool folded_trailer_field() const { return folded_trailer_field_; }
  // The trailer's bytes are bounded like the header's: past `bytes` the parse fails with
  // error::header_limit. Beast itself bounds only the header section.
  void trailer_limit(std::size_t bytes) { trailer_limit_ = bytes; }
  // Whether the connection may carry another request, from the header section alone (valid once it
  // is read). Beast's own keep_alive() also takes a trailer's Connection field into its flags, so
  // a field sent after the body could close the connection; none of the trailer is acted on.
  bool keep_alive() const { return keep_alive_; }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;

  void on_request_impl(boost::beast::http::verb method, string_view method_string, string_view target, int version,
                       error_code& ec) override;
  void on_response_impl(int status, string_view reason, int version, error_code& ec) override;
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code& ec) override;
  void on_header_impl(error_code& ec) override;
  void on_trailer_field(string_view name, string_view value, error_code& ec);
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code& ec) override;
  std::size_t on_body_impl(string_view body, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, string_view extensions, error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body, error_code& ec) override;
  void on_finish_impl(error_code& ec) override;

  Request& request_;
  std::size_t fields_ = 0;  // fields parsed so far; request_.headers may hold older ones past it
  std::size_t trailer_fields_ = 0;
  std::size_t trailer_bytes_ = 0;
  std::size_t trailer_limit_ = 16 * 1024;
  bool head_request_ = false;
  bool folded_field_ = false;
  bool folded_trailer_field_ = false;
  bool keep_alive_ = false;
  unsigned version_ = 11;
};

}  // namespace rr::http
