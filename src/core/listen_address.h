// SPDX-License-Identifier: Apache-2.0
// Where an HTTP endpoint listens (the Prometheus exporter): a numeric address and a port. The
// default address is loopback: serving on another interface must be written out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace pm {

struct ListenAddress {
  std::string host;  // numeric IPv4 or IPv6 address, without brackets
  uint16_t port = 0;
  bool ipv6 = false;
  // "127.0.0.1:9464", "[::1]:9464": the form the user would write.
  [[nodiscard]] std::string text() const;
};

// Accepts "9464" and ":9464" (both 127.0.0.1:9464), "localhost:9464", "0.0.0.0:9464",
// "192.0.2.7:9464", "[::1]:9464" and "[::]:9464". Host names other than localhost are refused:
// what a name resolves to can change, and an exporter should not end up on an unintended
// interface.
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace pm
