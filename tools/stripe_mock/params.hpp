// Reading a Stripe request's form parameters the way Stripe validates them: one place for the
// errors every endpoint of the stand-in provider shares (missing, unknown, invalid integer,
// metadata limits), in Stripe's wording.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/http/message.hpp"
#include "tools/stripe_mock/records.hpp"

namespace rr::stripe_mock {

// Decoded form fields, sorted by name, so the order a client sent them in does not matter.
using Params = std::vector<std::pair<std::string, std::string>>;

// A parameter's value, or nothing when it was not sent.
std::optional<std::string> param(const Params& params, std::string_view name);

// Stripe rejects parameters it does not know; metadata[...] is free-form. The error, if any.
std::optional<http::Response> reject_unknown(const Params& params, std::initializer_list<std::string_view> known);

http::Response missing(std::string_view name);

// A whole number in [1, 99999999] (Stripe's eight digits), or the error naming `name`.
std::variant<std::int64_t, http::Response> positive_amount(const std::string& text, std::string_view name);

// The metadata[key]=value fields within Stripe's limits (50 keys, keys up to 40 characters,
// values up to 500), or the error. An empty value sets nothing, as in Stripe.
std::variant<Metadata, http::Response> metadata(const Params& params);

// "No such charge: 'ch_x'", 404 resource_missing, as Stripe answers an unknown id.
http::Response no_such(std::string_view object, const std::string& id, std::string_view param_name);

std::int64_t now_epoch();

}  // namespace rr::stripe_mock
