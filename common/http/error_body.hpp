// The JSON error object every HTTP answer of ours uses: {"error":{"type":..,"message":..}}.
#pragma once

#include <string>
#include <string_view>

namespace rr::http {

std::string error_body(std::string_view type, std::string_view message);

}  // namespace rr::http
