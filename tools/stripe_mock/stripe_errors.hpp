// Stripe's error body, {"error":{"type":...,"message":...}}, built in one place so every endpoint
// of the stand-in provider fails in the shape real clients parse. An error with a code also
// carries Stripe's doc_url for it.
#pragma once

#include <string_view>

#include "common/http/message.hpp"

namespace rr::stripe_mock {

struct ErrorDetails {
  std::string_view code{};          // e.g. "parameter_missing", "card_declined"; omitted when empty
  std::string_view param{};         // the offending parameter; omitted when empty
  std::string_view decline_code{};  // card errors only
  std::string_view charge{};        // card errors: the declined charge, which exists (status "failed")
};

http::Response stripe_error(int status, std::string_view type, std::string_view message, ErrorDetails details = {});

// 402 card_error naming the failed charge: a decline's answer, first and replayed.
http::Response card_declined(std::string_view charge_id);

}  // namespace rr::stripe_mock
