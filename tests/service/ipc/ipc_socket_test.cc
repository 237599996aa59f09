// AdoptListeningSocket: the sockets systemd and Android init hand to sluiced.
#include "service/ipc/ipc_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

class AdoptListeningSocketTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-adopt-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A bound, blocking AF_UNIX stream socket that does not listen yet: what
  // Android init passes (systemd's also listens, which changes nothing here).
  ScopedFd BoundBlockingSocket() {
    ScopedFd fd(socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    return fd;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(AdoptListeningSocketTest, BoundSocketListensAndAcceptDoesNotBlock) {
  ScopedFd fd = BoundBlockingSocket();
  ASSERT_TRUE(AdoptListeningSocket(fd.get(), 8, "fd 3 (producer socket)").ok());
  EXPECT_NE(fcntl(fd.get(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, 0);
  // Nothing pending: an accept that blocked would hang the daemon's loop.
  EXPECT_FALSE(AcceptUnixSocket(fd.get()).valid());
  auto client = ConnectUnixSocket(path_);
  ASSERT_TRUE(client.ok()) << client.status().message();
  EXPECT_TRUE(AcceptUnixSocket(fd.get()).valid());
  EXPECT_FALSE(AcceptUnixSocket(fd.get()).valid());
}

TEST_F(AdoptListeningSocketTest, AlreadyListeningSocketIsAccepted) {
  ScopedFd fd = BoundBlockingSocket();
  ASSERT_EQ(listen(fd.get(), 4), 0);
  EXPECT_TRUE(AdoptListeningSocket(fd.get(), 8, "fd 3").ok());
}

TEST_F(AdoptListeningSocketTest, DatagramSocketIsRefusedWithTheFix) {
  ScopedFd fd(socket(AF_UNIX, SOCK_DGRAM, 0));
  Status s = AdoptListeningSocket(fd.get(), 8, "fd 4 (consumer socket)");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fd 4 (consumer socket) is not a unix stream socket"),
            std::string::npos)
      << s.message();
}

TEST_F(AdoptListeningSocketTest, NotASocketIsRefused) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ScopedFd r(pipe_fds[0]), w(pipe_fds[1]);
  Status s = AdoptListeningSocket(r.get(), 8, "fd 3");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fd 3 is not a socket"), std::string::npos) << s.message();
}

// What a user refused by the socket's permissions is told (root, which a
// test runs as, is never refused, so the message is checked on a stat).
TEST(SocketPermissionFixTest, NamesTheGroupToJoin) {
  struct stat st {};
  st.st_mode = S_IFSOCK | 0660;
  st.st_uid = 0;
  st.st_gid = 0;
  EXPECT_EQ(SocketPermissionFix(st),
            "the socket is 0660 root:root, so only root and the members of group root may "
            "connect; join the group (usermod -aG root USER, then log in again) or run as root");
  st.st_mode = S_IFSOCK | 0600;
  EXPECT_EQ(SocketPermissionFix(st), "the socket is 0600 root:root, so only root may connect; run as root");
}

TEST(ConnectUnixSocketTest, NoListenerAsksWhetherSluicedRuns) {
  auto client = ConnectUnixSocket("/nonexistent-sluice-dir/consumer.sock");
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("is sluiced running?"), std::string::npos)
      << client.status().message();
}

}  // namespace
}  // namespace sluice
