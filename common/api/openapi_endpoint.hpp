// GET /openapi.yaml: the API's contract, docs/openapi.yaml byte for byte. The bytes are compiled in
// (common/cmake/embed_openapi.cmake writes them into a generated source at build time), so the
// document served is always the one the binary was built with and no file is read at run time.
// Answered from memory on the I/O thread, without authentication, like /healthz. Cacheable: a
// strong ETag (the document's SHA-256, computed at build time) with Cache-Control, and 304 for an
// If-None-Match that names it, so a client generator or gateway that polls it costs one header.
#pragma once

#include <string>
#include <string_view>

#include "common/api/endpoint.hpp"

namespace rr::api {

inline constexpr std::string_view kOpenApiPath = "/openapi.yaml";

// Defined in the generated embedded_openapi.cpp.
std::string_view openapi_document();
std::string_view openapi_etag();  // quoted, e.g. "\"3f2a...\""

class OpenApiEndpoint : public Endpoint {
 public:
  std::optional<http::Response> answer_in_memory(const http::Request& request, const flows::PathArguments&) override {
    return answer(request);
  }
  http::Response handle(const http::Request& request, const flows::PathArguments&) override { return answer(request); }

 private:
  // RFC 9110 section 13.1.2: "*" or a comma-separated list of entity tags, compared weakly.
  static bool names_current_version(std::string_view if_none_match) {
    while (!if_none_match.empty()) {
      auto comma = if_none_match.find(',');
      auto tag = if_none_match.substr(0, comma);
      while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
      while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
      if (tag.starts_with("W/")) tag.remove_prefix(2);
      if (tag == "*" || tag == openapi_etag()) return true;
      if (comma == std::string_view::npos) break;
      if_none_match.remove_prefix(comma + 1);
    }
    return false;
  }

  static http::Response answer(const http::Request& request) {
    http::Headers headers{{"ETag", std::string(openapi_etag())}, {"Cache-Control", "public, max-age=300"}};
    if (auto tags = request.header("If-None-Match"); tags && names_current_version(*tags)) {
      return http::Response{304, "", std::move(headers), ""};
    }
    return http::Response{200, "application/yaml", std::move(headers), std::string(openapi_document())};
  }
};

}  // namespace rr::api
