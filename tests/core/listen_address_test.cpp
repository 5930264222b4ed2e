// SPDX-License-Identifier: Apache-2.0
// --prometheus / [prometheus] listen: loopback unless another address is written out; every
// mistake says what is wrong and shows the forms that work.
#include "core/listen_address.h"

#include <gtest/gtest.h>

namespace pm {
namespace {

TEST(ListenAddress, PortAloneIsLoopback) {
  for (const char* text : {"9464", ":9464", "localhost:9464"}) {
    auto a = parse_listen_address(text);
    ASSERT_TRUE(a.ok()) << text;
    EXPECT_EQ(a->host, "127.0.0.1") << text;
    EXPECT_EQ(a->port, 9464) << text;
    EXPECT_EQ(a->text(), "127.0.0.1:9464");
  }
}

TEST(ListenAddress, OtherAddressesAsWritten) {
  auto any = parse_listen_address("0.0.0.0:9100");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 9100);
  EXPECT_FALSE(any->ipv6);
  auto v6 = parse_listen_address("[::1]:65535");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(v6->ipv6);
  EXPECT_EQ(v6->port, 65535);
  EXPECT_EQ(v6->text(), "[::1]:65535");
  auto all6 = parse_listen_address("[::]:1");
  ASSERT_TRUE(all6.ok());
  EXPECT_EQ(all6->host, "::");
}

TEST(ListenAddress, MistakesSayWhatIsWrong) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"", "no port"}, Case{"abc", "not a port number"}, Case{"1.2.3.4", "not a port number"},
                        Case{"9464:", "not a port number"}, Case{":0", "between 1 and 65535"},
                        Case{":65536", "between 1 and 65535"}, Case{"300.1.1.1:80", "not a numeric IPv4"},
                        Case{"host.example:80", "not a numeric IPv4"}, Case{"::1:9464", "brackets"},
                        Case{"[::1:9464", "no ']'"}, Case{"[::1]9464", "no ':PORT'"},
                        Case{"[1.2.3.4]:80", "not a numeric IPv6"}, Case{":-1", "not a port number"},
                        Case{": 80", "not a port number"},
                        // Found by fuzzing: empty brackets, and [localhost], were read as 127.0.0.1 marked IPv6.
                        Case{"[]:80", "no IPv6 address in the brackets"},
                        Case{"[localhost]:80", "not a numeric IPv6"}}) {
    auto a = parse_listen_address(c.text);
    ASSERT_FALSE(a.ok()) << c.text;
    EXPECT_EQ(a.error().code, Errc::kInvalidArgument);
    EXPECT_NE(a.error().message.find(c.says), std::string::npos) << c.text << ": " << a.error().message;
    EXPECT_NE(a.error().message.find("e.g. 9464, 127.0.0.1:9464"), std::string::npos) << a.error().message;
  }
}

}  // namespace
}  // namespace pm
