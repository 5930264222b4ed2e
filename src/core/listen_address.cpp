// SPDX-License-Identifier: Apache-2.0
#include "core/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>

namespace pm {

std::string ListenAddress::text() const {
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

constexpr const char* kForms = "write PORT or ADDR:PORT with a numeric address, e.g. 9464, 127.0.0.1:9464, "
                               "0.0.0.0:9464 (every interface) or [::1]:9464";

// Built by append, not by a chain of operator+ on temporaries: GCC 12 at -O3 (Release) reports a
// -Wrestrict false positive inside such chains (GCC bug 105329).
std::string quoted(std::string_view s) {
  std::string q;
  q.reserve(s.size() + 2);
  q.append(1, '\'').append(s).append(1, '\'');
  return q;
}

Error bad(std::string_view text, std::string_view why) {
  std::string msg = quoted(text);
  msg.append(": ").append(why).append(": ").append(kForms);
  return make_error(Errc::kInvalidArgument, msg);
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress a;
  std::string_view host, port;
  if (text.empty()) return bad(text, "no port");
  if (text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "no ']' after the IPv6 address");
    host = text.substr(1, close - 1);
    if (host.empty()) return bad(text, "no IPv6 address in the brackets");  // "[]:80" is not loopback
    if (close + 1 >= text.size() || text[close + 1] != ':') return bad(text, "no ':PORT' after the IPv6 address");
    port = text.substr(close + 2);
    a.ipv6 = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      port = text;
    } else {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      if (host.find(':') != std::string_view::npos) return bad(text, "an IPv6 address must be written in brackets");
    }
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size()) {
    return bad(text, quoted(port).append(" is not a port number"));
  }
  if (value == 0 || value > 65535) return bad(text, "the port must be between 1 and 65535");
  a.port = static_cast<uint16_t>(value);

  if (!a.ipv6 && (host.empty() || host == "localhost")) {
    a.host = "127.0.0.1";  // loopback unless another address is written out
    return a;
  }
  a.host = std::string(host);
  unsigned char buf[sizeof(in6_addr)];
  if (::inet_pton(a.ipv6 ? AF_INET6 : AF_INET, a.host.c_str(), buf) != 1) {
    return bad(text, quoted(a.host).append(a.ipv6 ? " is not a numeric IPv6 address"
                                                   : " is not a numeric IPv4 address"));
  }
  return a;
}

}  // namespace pm
