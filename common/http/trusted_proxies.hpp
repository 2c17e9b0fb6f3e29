// Which peers may tell us the client's address (X-Forwarded-For), and the address they tell: a
// load balancer in front of the API is the peer of every connection, so without this every
// origin_ip, access line and per-address bound would name the load balancer.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/message.hpp"

namespace rr::http {

class TrustedProxies {
 public:
  // A comma-separated list of addresses and CIDRs, IPv4 and IPv6 ("10.0.0.5, 192.168.0.0/16,
  // fd00::/8"); empty trusts nobody. Throws std::invalid_argument naming the element it cannot read.
  static TrustedProxies parse(std::string_view list);

  bool empty() const { return networks_.empty(); }
  bool contains(std::string_view address) const;

  // The peer's address unless the peer is trusted: then the right-most X-Forwarded-For address
  // that is not itself trusted (each trusted proxy appends the address it saw, and only the
  // elements appended by trusted ones are not the client's own writing). A malformed element
  // ends the walk at the last address a trusted hop vouched for.
  std::string client_address(const std::string& peer, const Headers& headers) const;

 private:
  struct Network {
    std::array<unsigned char, 16> bytes{};  // IPv4 in the first 4
    unsigned prefix_bits = 0;
    bool v6 = false;
  };
  std::vector<Network> networks_;
};

}  // namespace rr::http
