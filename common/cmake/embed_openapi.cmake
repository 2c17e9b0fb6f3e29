# Turns docs/openapi.yaml into a C++ source holding its exact bytes (as a byte array, so no
# character of the document needs escaping) and a strong ETag made of their SHA-256, for
# GET /openapi.yaml (common/api/openapi_endpoint.hpp). Run at build time by common/CMakeLists.txt.
file(READ ${INPUT} hex HEX)
file(SHA256 ${INPUT} digest)
string(LENGTH "${hex}" hex_length)
if(hex_length EQUAL 0)
  message(FATAL_ERROR "${INPUT} is empty")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# Lines of 32 bytes keep the generated file readable in a debugger.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n    " bytes "${bytes}")
file(WRITE ${OUTPUT}.tmp "// Generated from docs/openapi.yaml by embed_openapi.cmake; do not edit.
#include \"common/api/openapi_endpoint.hpp\"

namespace rr::api {
namespace {
constexpr unsigned char kDocument[] = {
    ${bytes}};
}  // namespace

std::string_view openapi_document() { return {reinterpret_cast<const char*>(kDocument), sizeof kDocument}; }
std::string_view openapi_etag() { return \"\\\"${digest}\\\"\"; }
}  // namespace rr::api
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
