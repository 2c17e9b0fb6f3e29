// Addresses compared as bytes under a prefix; IPv4-mapped IPv6 (::ffff:a.b.c.d, what a dual-stack
// socket reports) counts as the IPv4 address, as the server reports peers.
#include "common/http/trusted_proxies.hpp"

#include <boost/asio/ip/address.hpp>
#include <charconv>
#include <optional>
#include <stdexcept>

namespace rr::http {
namespace {

namespace ip = boost::asio::ip;

std::string_view trim_forwarded(std::string_view text) {
  auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::optional<ip::address> address_of(std::string_view text) {
  boost::system::error_code ec;
  auto address = ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return ip::address(ip::make_address_v4(ip::v4_mapped, address.to_v6()));
  }
  return address;
}

// The comma-separated elements of every field with this name, in order.
std::vector<std::string_view> list_elements(const Headers& headers, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& [field, value] : headers) {
    if (!iequals(field, name)) continue;
    std::string_view rest = value;
    for (;;) {
      auto comma = rest.find(',');
      out.push_back(trim_forwarded(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

}  // namespace

TrustedProxies TrustedProxies::parse(std::string_view list) {
  TrustedProxies out;
  if (trim_forwarded(list).empty()) return out;
  for (;;) {
    auto comma = list.find(',');
    auto element = trim_forwarded(list.substr(0, comma));
    auto slash = element.find('/');
    auto address = address_of(element.substr(0, slash));
    if (!address) throw std::invalid_argument("not an IP address or CIDR: \"" + std::string(element) + "\"");
    Network network;
    network.v6 = address->is_v6();
    unsigned max_bits = network.v6 ? 128 : 32;
    network.prefix_bits = max_bits;
    if (slash != std::string_view::npos) {
      auto bits = element.substr(slash + 1);
      auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), network.prefix_bits);
      if (ec != std::errc() || end != bits.data() + bits.size() || bits.empty() || network.prefix_bits > max_bits) {
        throw std::invalid_argument("not an IP address or CIDR: \"" + std::string(element) + "\"");
      }
    }
    if (network.v6) {
      auto bytes = address->to_v6().to_bytes();
      std::copy(bytes.begin(), bytes.end(), network.bytes.begin());
    } else {
      auto bytes = address->to_v4().to_bytes();
      std::copy(bytes.begin(), bytes.end(), network.bytes.begin());
    }
    out.networks_.push_back(network);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

bool TrustedProxies::contains(std::string_view text) const {
  if (networks_.empty()) return false;
  auto address = address_of(text);
  if (!address) return false;
  std::array<unsigned char, 16> bytes{};
  if (address->is_v6()) {
    auto v6 = address->to_v6().to_bytes();
    std::copy(v6.begin(), v6.end(), bytes.begin());
  } else {
    auto v4 = address->to_v4().to_bytes();
    std::copy(v4.begin(), v4.end(), bytes.begin());
  }
  for (const auto& network : networks_) {
    if (network.v6 != address->is_v6()) continue;
    unsigned whole = network.prefix_bits / 8, rest = network.prefix_bits % 8;
    if (!std::equal(bytes.begin(), bytes.begin() + whole, network.bytes.begin())) continue;
    if (rest == 0) return true;
    auto mask = static_cast<unsigned char>(0xFF << (8 - rest));
    if ((bytes[whole] & mask) == (network.bytes[whole] & mask)) return true;
  }
  return false;
}

std::string TrustedProxies::client_address(const std::string& peer, const Headers& headers) const {
  if (!contains(peer)) return peer;
  std::string vouched = peer;
  auto elements = list_elements(headers, "X-Forwarded-For");
  for (auto element = elements.rbegin(); element != elements.rend(); ++element) {
    auto address = address_of(*element);
    if (!address) break;
    // Written as the address reads, not as the client spelled it: it goes to logs and rows.
    vouched = address->to_string();
    if (!contains(vouched)) break;
  }
  return vouched;
}

}  // namespace rr::http
