#include "service/relay/relay_address.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(RelayAddressTest, ParsesEachForm) {
  auto unix_path = ParseRelayAddress("/run/sluice/relay.sock");
  ASSERT_TRUE(unix_path.ok());
  EXPECT_EQ(unix_path->kind, RelayAddress::Kind::kUnix);
  EXPECT_EQ(unix_path->path, "/run/sluice/relay.sock");
  auto virtio = ParseRelayAddress("virtio:org.sluice.relay");
  ASSERT_TRUE(virtio.ok());
  EXPECT_EQ(virtio->kind, RelayAddress::Kind::kDevice);
  EXPECT_EQ(virtio->path, "/dev/virtio-ports/org.sluice.relay");
  auto vsock = ParseRelayAddress("vsock:2:7070");
  ASSERT_TRUE(vsock.ok());
  EXPECT_EQ(vsock->kind, RelayAddress::Kind::kVsock);
  EXPECT_TRUE(vsock->has_cid);
  EXPECT_EQ(vsock->cid, 2u);
  EXPECT_EQ(vsock->port, 7070u);
  auto vsock_listen = ParseRelayAddress("vsock:7070");
  ASSERT_TRUE(vsock_listen.ok());
  EXPECT_FALSE(vsock_listen->has_cid);
  auto tcp = ParseRelayAddress("tcp:7071");
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->ToString(), "tcp:127.0.0.1:7071");
  EXPECT_TRUE(ParseRelayAddress("tcp:10.0.2.2:7071").ok());
  EXPECT_TRUE(ParseRelayAddress("/dev/hvc1").ok());
}

TEST(RelayAddressTest, RefusesMalformedOnesNamingTheForms) {
  for (const char* bad : {"", "unix:", "virtio:", "virtio:a/b", "vsock:x", "vsock:2:", "tcp:",
                          "tcp:99999", "tcp:host.example:80", "tcp:1.2.3.4:0"}) {
    auto a = ParseRelayAddress(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("vsock:[CID:]PORT"), std::string::npos) << a.status().message();
  }
}

TEST(RelayAddressTest, TheHostCannotListenOnADevice) {
  auto a = ParseRelayAddress("virtio:x");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(ListenRelayAddress(*a, ListenOptions{}).ok());
}

}  // namespace
}  // namespace sluice
