// The JSON error object of every error we answer or store: {"error":{"type":..,"message":..}}.
// JSON, not HTTP: the server and the API's edge answer with it, and a flow stores it on its key as
// the final result of a refusal (a declined card, no such ride) that every replay repeats byte for
// byte, so it stands on the ground floor where the flows, which know no HTTP, can render it.
#pragma once

#include <string>
#include <string_view>

namespace rr {

std::string error_body(std::string_view type, std::string_view message);

}  // namespace rr
