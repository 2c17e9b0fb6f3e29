// API_TRUSTED_PROXIES and X-Forwarded-For (common/http/trusted_proxies.*): any list is read or
// refused with std::invalid_argument; a list read trusts each address it names; and whatever the
// peer and the header, the client's address is the peer itself or, written as the address reads,
// an element of the header, and it is the peer whenever the peer is not trusted. Input: the list on
// the first line, the peer's address on the second, then the X-Forwarded-For fields, one a line.
#include <boost/asio/ip/address.hpp>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/http/message.hpp"
#include "common/http/trusted_proxies.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"
#include "fuzz/support/split.hpp"

namespace {

std::string_view trimmed(std::string_view text) {
  auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// An element as a log line or a row would show it: Boost's reading, IPv4-mapped as IPv4.
std::string as_written(std::string_view element) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(std::string(element), ec);
  if (ec) return {};
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6()).to_string();
  }
  return address.to_string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  std::string_view list = input.line();
  std::string peer(input.line());
  rr::http::TrustedProxies proxies;
  try {
    proxies = rr::http::TrustedProxies::parse(list);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (!trimmed(list).empty()) {
    for (auto element : rr::fuzz::split_all(list, ',')) {
      auto address = trimmed(element).substr(0, trimmed(element).find('/'));
      FUZZ_CHECK(proxies.contains(address));
    }
  }

  rr::http::Headers headers;
  for (auto line : rr::fuzz::split_all(input.rest(), '\n')) headers.emplace_back("X-Forwarded-For", std::string(line));
  std::string client = proxies.client_address(peer, headers);
  if (!proxies.contains(peer)) FUZZ_CHECK(client == peer);
  if (client == peer) return 0;
  bool an_element = false;
  for (const auto& [name, value] : headers) {
    for (auto element : rr::fuzz::split_all(value, ','))
      an_element = an_element || client == as_written(trimmed(element));
  }
  FUZZ_CHECK(an_element);
  return 0;
}
