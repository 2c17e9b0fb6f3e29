#include "common/http/request_parser.hpp"

#include <boost/beast/http/error.hpp>
#include <string_view>

namespace rr::http {

namespace bhttp = boost::beast::http;

RequestParser::RequestParser(Request& into) : request_(into) {
  request_.body.clear();
  request_.admission.reset();
  request_.wait_deadline.reset();
  request_.wait_place.reset();
}

void RequestParser::on_request_impl(bhttp::verb method, string_view method_string, string_view target, int version,
                                    error_code&) {
  head_request_ = method == bhttp::verb::head;
  if (head_request_) {
    request_.method.assign("GET");
  } else {
    request_.method.assign(method_string.data(), method_string.size());
  }
  request_.target.assign(target.data(), target.size());
  auto question = target.find('?');
  if (question == string_view::npos) {
    request_.path.assign(target.data(), target.size());
    request_.query.clear();
  } else {
    request_.path.assign(target.data(), question);
    request_.query.assign(target.data() + question + 1, target.size() - question - 1);
  }
  version_ = static_cast<unsigned>(version);
}

// A request parser is never given a response.
void RequestParser::on_response_impl(int, string_view, int, error_code& ec) { ec = bhttp::error::bad_version; }

namespace {

// Beast reports a field once it has read the field's lines and the byte after each line's CRLF
// (which tells a folded continuation from the next field), and `name` points at the field's first
// byte in those bytes; so the first line's end and the byte after it are there to read. A name or
// value cannot hold a CR, so the first CR ends the first line.
bool is_folded(std::string_view name) {
  const char* line_end = name.data() + name.size();
  while (*line_end != '\r') ++line_end;
  return line_end[2] == ' ' || line_end[2] == '\t';
}

}  // namespace

void RequestParser::on_field_impl(bhttp::field, string_view name, string_view value, error_code& ec) {
  // Past the header section only a chunked body's trailer has fields.
  if (is_header_done()) return on_trailer_field(name, value, ec);
  if (is_folded({name.data(), name.size()})) folded_field_ = true;
  auto& headers = request_.headers;
  if (fields_ < headers.size()) {
    headers[fields_].first.assign(name.data(), name.size());
    headers[fields_].second.assign(value.data(), value.size());
  } else {
    headers.emplace_back(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
  }
  ++fields_;
}

void RequestParser::on_header_impl(error_code&) {
  request_.headers.resize(fields_);
  keep_alive_ = basic_parser::keep_alive();
}

// A trailer's lines are read by the header's rules (no obs-fold, a bound on their bytes) and then
// dropped: see trailer_fields().
void RequestParser::on_trailer_field(string_view name, string_view value, error_code& ec) {
  if (is_folded({name.data(), name.size()})) folded_trailer_field_ = true;
  ++trailer_fields_;
  trailer_bytes_ += name.size() + value.size() + 4;  // ": " and CRLF
  if (trailer_bytes_ > trailer_limit_) ec = bhttp::error::header_limit;
}

// The parser has checked the length against its body limit already.
void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code&) {
  if (content_length) request_.body.reserve(static_cast<std::size_t>(*content_length));
}

std::size_t RequestParser::on_body_impl(string_view body, error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

void RequestParser::on_chunk_header_impl(std::uint64_t, string_view, error_code&) {}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

void RequestParser::on_finish_impl(error_code&) {}

}  // namespace rr::http
