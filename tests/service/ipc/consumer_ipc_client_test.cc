// Tests of service/ipc/consumer_ipc_client.h against a bare socket standing
// in for sluiced: when the other end goes away (sluiced exits or is killed),
// the client says so at once, in every call, and connection_lost() tells it
// apart from an error of the session.
#include "service/ipc/consumer_ipc_client.h"

#include <stdlib.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "perfetto/common/trace_stats.pb.h"
#include "service/ipc/ipc_socket.h"

namespace sluice {
namespace {

TEST(ConsumerIpcClientTest, SluicedGoneIsReportedAtOnce) {
  char dir[] = "/tmp/sluice-consumer-client-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/consumer.sock";
  auto listener = ListenUnixSocket(path, ListenOptions{});
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  auto client = ConsumerIpcClient::Connect(path);
  ASSERT_TRUE(client.ok()) << client.status().message();
  ScopedFd accepted = AcceptUnixSocket(listener->get());
  ASSERT_TRUE(accepted.valid());
  EXPECT_FALSE((*client)->connection_lost());
  // Nothing yet: the wait times out.
  EXPECT_FALSE((*client)->WaitForTracingDisabled(10));

  accepted.reset();  // "sluiced" is gone.
  std::string error;
  ASSERT_TRUE((*client)->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "lost the connection to sluiced (it exited or was killed)");
  EXPECT_TRUE((*client)->connection_lost());
  auto stats = (*client)->GetTraceStats();
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().message(), "the connection to sluiced is closed");
  EXPECT_FALSE((*client)->FreeBuffers().ok());

  listener->reset();
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace sluice
