// The relay on the real kernel with the real binaries: sluiced
// --relay-socket, sluice-relay on a unix socket standing in for the guest's
// virtio-serial port, sluice-probes connected to the relay (this kernel
// plays the guest), `sluice record --daemon` on the host. Upstream's
// trace_processor must see the relayed machine with its CPUs, threads and
// every marker once, on the host's timeline. (The QEMU guest and host in one
// trace: vm-tests/scenarios/70-relay.sh.)
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

using testing::ChildProcess;

class RelayKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_dir_ = testing::SluiceBinDir();
    const std::string why = testing::WhyRecordTestsCannotRun(bin_dir_);
    if (!why.empty()) SLUICE_KERNEL_SKIP(why);
    if (access((bin_dir_ + "/sluice-relay").c_str(), X_OK) != 0)
      SLUICE_KERNEL_SKIP("no " + bin_dir_ + "/sluice-relay: build it (make all)");
    dir_ = testing::MakeTempDir("sluice-relay-kernel-");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    probes_.Terminate(20000);
    relay_.Terminate(20000);
    sluiced_.Terminate(20000);
    if (!dir_.empty()) testing::RemoveTempDir(dir_);
  }
  std::string Path(const char* name) const { return dir_ + "/" + name; }
  std::string Upstream() const {
    const std::string shell = testing::UpstreamPerfettoDir() + "/trace_processor_shell";
    if (access(shell.c_str(), X_OK) == 0) return shell;
    if (testing::RunningUnderCi())
      ADD_FAILURE() << "no upstream trace_processor_shell in ../shared/tools/perfetto";
    return "";
  }

  std::string bin_dir_, dir_;
  ChildProcess sluiced_, relay_, probes_;
};

TEST_F(RelayKernelTest, ARelayedMachineIsItsOwnMachineInUpstreamsTraceProcessor) {
  ASSERT_TRUE(sluiced_.Start({bin_dir_ + "/sluiced", "--producer-socket", Path("producer.sock"),
                              "--consumer-socket", Path("consumer.sock"), "--relay-socket",
                              Path("relay.sock")},
                             Path("sluiced.out"), Path("sluiced.err")));
  // Both retry until their peer listens.
  ASSERT_TRUE(relay_.Start({bin_dir_ + "/sluice-relay", "--to", "unix:" + Path("relay.sock"),
                            "--producer-socket", Path("guest.sock"), "--machine-name", "guest-7"},
                           Path("relay.out"), Path("relay.err")));
  ASSERT_TRUE(probes_.Start({bin_dir_ + "/sluice-probes", "--producer-socket", Path("guest.sock")},
                            Path("probes.out"), Path("probes.err")));
  const uint64_t deadline = testing::NowMs() + testing::ScaledTimeoutMs(60000);
  while (sluiced_.Stderr().find("'sluice-probes' connected") == std::string::npos &&
         testing::NowMs() < deadline && sluiced_.running() && relay_.running())
    usleep(20 * 1000);
  ASSERT_NE(sluiced_.Stderr().find("'sluice-probes' connected"), std::string::npos)
      << sluiced_.Describe() << relay_.Describe() << probes_.Describe();

  const std::string trace = Path("trace.pftrace");
  ChildProcess recorder;
  ASSERT_TRUE(recorder.Start({bin_dir_ + "/sluice", "record", "--daemon", "--consumer-socket",
                              Path("consumer.sock"), "-o", trace, "sched/sched_switch",
                              "ftrace/print"},
                             Path("record.out"), Path("record.err")));
  ASSERT_TRUE(testing::WriteMarkerUntilInFile("relay-kernel-ready", trace,
                                              testing::ScaledTimeoutMs(60000), &recorder))
      << recorder.Describe() << sluiced_.Describe() << relay_.Describe();
  constexpr int kMarkers = 2000;
  {
    std::ofstream marker("/sys/kernel/tracing/trace_marker");
    for (int i = 0; i < kMarkers; i++) marker << "relay-kernel-" << i << std::endl;
  }
  recorder.Signal(SIGINT);
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(120000))) << recorder.Describe();
  ASSERT_TRUE(recorder.exited_normally_with(0)) << recorder.Describe();

  // sluice's own account: the machine, no losses.
  testing::CommandResult stats = testing::RunToCompletion({bin_dir_ + "/sluice", "stats", trace}, dir_);
  EXPECT_EQ(stats.exit_code, 0) << stats.out << stats.err;
  EXPECT_NE(stats.out.find("guest-7"), std::string::npos) << stats.out;

  const std::string shell = Upstream();
  if (shell.empty()) GTEST_SKIP() << "no upstream trace_processor_shell in ../shared/tools/perfetto";
  {
    std::ofstream sql(Path("q.sql"));
    sql << "select 'machines', count(*) from machine;\n"
           "select 'guest', raw_id, sysname, num_cpus from machine where raw_id = 1;\n"
           "select 'guest cpus', count(*) from cpu where machine_id = 1;\n"
           "select 'markers', count(distinct a.string_value), count(*) from ftrace_event e "
           "join args a using (arg_set_id) join cpu c on e.ucpu = c.id "
           "where e.name = 'print' and a.key = 'buf' and a.string_value like 'relay-kernel-%' "
           "and a.string_value not like '%ready%' and c.machine_id = 1;\n"
           "select 'errors', count(*) from stats where severity in ('error', 'data_loss') "
           "and value > 0 and name != 'systrace_parse_failure';\n"
           "select 'guest threads', count(*) from thread where machine_id = 1;\n";
  }
  testing::CommandResult q =
      testing::RunToCompletion({shell, "-q", Path("q.sql"), trace}, dir_);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("\"machines\",2"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("\"guest\",1,\"Linux\""), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("\"guest cpus\",0"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("\"markers\"," + std::to_string(kMarkers) + "," + std::to_string(kMarkers)),
            std::string::npos)
      << q.out;
  EXPECT_NE(q.out.find("\"errors\",0"), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("\"guest threads\",0"), std::string::npos) << q.out;
}

}  // namespace
}  // namespace sluice
