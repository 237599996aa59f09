#include "service/inherited_sockets.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

StatusOr<InheritedSockets> Find(const std::map<std::string, std::string>& env, pid_t pid = 42) {
  return FindInheritedSockets(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      pid);
}

TEST(InheritedSocketsTest, NoneWithoutVariables) {
  auto s = Find({});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->producer_fd, -1);
  EXPECT_EQ(s->consumer_fd, -1);
  EXPECT_EQ(s->source, "");
}

TEST(InheritedSocketsTest, SystemdGivesFds3And4InListenStreamOrder) {
  auto s = Find({{"LISTEN_PID", "42"}, {"LISTEN_FDS", "2"}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->producer_fd, 3);
  EXPECT_EQ(s->consumer_fd, 4);
  EXPECT_EQ(s->source, "systemd");
}

TEST(InheritedSocketsTest, SystemdVariablesForAnotherProcessAreIgnored) {
  auto s = Find({{"LISTEN_PID", "41"}, {"LISTEN_FDS", "2"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->source, "");
}

TEST(InheritedSocketsTest, SystemdWithOneSocketIsAnErrorNamingTheFix) {
  auto s = Find({{"LISTEN_PID", "42"}, {"LISTEN_FDS", "1"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("LISTEN_FDS=1; expected 2"), std::string::npos)
      << s.status().message();
}

TEST(InheritedSocketsTest, SystemdRelaySocketIsFoundByItsNameWhereverItIs) {
  for (const auto& [names, relay, producer, consumer] :
       std::vector<std::tuple<std::string, int, int, int>>{
           {"relay:sluiced.socket:sluiced.socket", 3, 4, 5},
           {"sluiced.socket:relay:sluiced.socket", 4, 3, 5},
           {"sluiced.socket:sluiced.socket:relay", 5, 3, 4}}) {
    auto s = Find({{"LISTEN_PID", "42"}, {"LISTEN_FDS", "3"}, {"LISTEN_FDNAMES", names}});
    ASSERT_TRUE(s.ok()) << names << ": " << s.status().message();
    EXPECT_EQ(s->relay_fd, relay) << names;
    EXPECT_EQ(s->producer_fd, producer) << names;
    EXPECT_EQ(s->consumer_fd, consumer) << names;
  }
  auto plain = Find({{"LISTEN_PID", "42"}, {"LISTEN_FDS", "2"}});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->relay_fd, -1);
  // Three sockets without a relay among them: not ours to guess.
  EXPECT_FALSE(Find({{"LISTEN_PID", "42"}, {"LISTEN_FDS", "3"}}).ok());
}

TEST(InheritedSocketsTest, AndroidInitSockets) {
  auto s = Find({{kAndroidProducerSocketEnv, "9"}, {kAndroidConsumerSocketEnv, "10"}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->producer_fd, 9);
  EXPECT_EQ(s->consumer_fd, 10);
  EXPECT_EQ(s->source, "Android init");
}

TEST(InheritedSocketsTest, AndroidWithOnlyOneSocketIsAnError) {
  auto s = Find({{kAndroidProducerSocketEnv, "9"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("socket sluice_consumer"), std::string::npos)
      << s.status().message();
}

TEST(InheritedSocketsTest, AndroidGarbageFdIsAnError) {
  auto s = Find({{kAndroidProducerSocketEnv, "9"}, {kAndroidConsumerSocketEnv, "ten"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'ten' is not a file descriptor"), std::string::npos)
      << s.status().message();
}

// sluiced in traced's place on Android: init hands it traced's sockets,
// beside its own or alone; each socket takes both protocols.
TEST(InheritedSocketsTest, AndroidTracedSocketsBesideOrInsteadOfSluices) {
  auto both = Find({{"ANDROID_SOCKET_sluice_producer", "10"}, {"ANDROID_SOCKET_sluice_consumer", "11"},
                    {"ANDROID_SOCKET_traced_producer", "12"}, {"ANDROID_SOCKET_traced_consumer", "13"}});
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(both->producer_fd, 10);
  EXPECT_EQ(both->consumer_fd, 11);
  EXPECT_EQ(both->perfetto_producer_fd, 12);
  EXPECT_EQ(both->perfetto_consumer_fd, 13);
  auto traced_only = Find({{"ANDROID_SOCKET_traced_producer", "12"}, {"ANDROID_SOCKET_traced_consumer", "13"}});
  ASSERT_TRUE(traced_only.ok()) << traced_only.status().message();
  EXPECT_EQ(traced_only->producer_fd, 12);
  EXPECT_EQ(traced_only->consumer_fd, 13);
  EXPECT_EQ(traced_only->perfetto_producer_fd, -1);
  EXPECT_EQ(traced_only->source, "Android init");
  auto half = Find({{"ANDROID_SOCKET_traced_producer", "12"}});
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("socket traced_consumer"), std::string::npos)
      << half.status().message();
}

}  // namespace
}  // namespace sluice
