// How each registered flow's parameters are read from a request: the HTTP edge's half of the flow
// registry (common/flows/flow_registry.hpp), kept here so that the registry, and the completer that
// links it, know nothing of HTTP requests.
#pragma once

#include <string>

#include "common/flows/flow_registry.hpp"
#include "common/http/message.hpp"

namespace rr::api {

// The request's parameters for this flow as canonical JSON (equal values give equal text), stored
// on the key and compared on a replay. Throws ApiError (400, 404, 415, 422) for what it refuses.
std::string read_flow_params(const flows::RegisteredFlow& flow, const http::Request& request,
                             const flows::PathArguments& arguments);

// Throws std::logic_error naming the first registered flow without a reader here: called when
// the API starts, so a flow registered without its reader never serves a request.
void require_params_readers();

}  // namespace rr::api
