// Tests of `sluice sessions` and `sluice clone` (user/cmd/sessions_command.h,
// user/cmd/clone_command.h), no kernel: the build's `sluice` binary against a
// TracingService with its IpcServer in this process, on sockets in a temp
// dir, with sessions the test creates over ConsumerIpcClient (they need no
// producer). The listing's format is checked line by line on its own.
#include "user/cmd/sessions_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "service/ipc/consumer_ipc_client.h"
#include "service/ipc/ipc_server.h"
#include "service/tracing_service.h"
#include "shm/base/file_util.h"
#include "tests/child_process_test_util.h"
#include "tests/service/service_test_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

using Result = testing::CommandResult;

TEST(FormatSessionListTest, OneBlockPerSession) {
  SessionList list;
  SessionInfo detached;
  detached.id = 3;
  detached.key = "night-run";
  detached.owner_uid = 1000;
  detached.state = SessionInfo::State::kStarted;
  detached.detached = true;
  detached.age_ms = 80500;
  detached.duration_ms = 600000;
  detached.data_sources = {"linux.ftrace", "linux.process_stats"};
  detached.buffers = {{64ull << 20, false, 24ull << 20}};
  detached.chunks_overwritten = 12;
  detached.flushes_failed = 1;
  detached.output_path = "/home/u/trace.pftrace";
  detached.output_temp_path = "/home/u/trace.pftrace.recording-Ab12Cd";
  list.sessions.push_back(detached);
  SessionInfo clone;
  clone.id = 4;
  clone.cloned_from = 3;
  clone.owner_uid = 0;
  clone.consumer_pid = 77;
  clone.state = SessionInfo::State::kEnded;
  clone.age_ms = 1200;
  clone.data_sources = {"linux.ftrace"};
  clone.buffers = {{64ull << 20, false, 24ull << 20}, {512 << 10, true, 0}};
  list.sessions.push_back(clone);
  list.other_users = 2;
  EXPECT_EQ(FormatSessionList(list),
            "session 3 'night-run' (uid 1000): recording, detached, 1m20s of 10m00s\n"
            "  config: 1 buffer (64 MiB ring); linux.ftrace, linux.process_stats; written at the end\n"
            "  buffers: 24 MiB of 64 MiB held (38%)\n"
            "  losses so far: 12 chunks overwritten, 1 flush failed\n"
            "  output: /home/u/trace.pftrace (written to /home/u/trace.pftrace.recording-Ab12Cd until the end)\n"
            "session 4, a clone of session 3 (uid 0): ended, attached to pid 77, 1s\n"
            "  config: 2 buffers (64 MiB ring, 512 KiB discard); linux.ftrace; read by its consumer\n"
            "  buffers: 24 MiB of 64.5 MiB held (37%)\n"
            "  losses so far: none\n"
            "(2 sessions of other users not listed: run as root to see them)\n");
  EXPECT_EQ(FormatSessionList(SessionList{}), "no tracing sessions\n");

  SessionInfo waiting;
  waiting.id = 5;
  waiting.key = "on-bug";
  waiting.state = SessionInfo::State::kConfigured;
  waiting.consumer_pid = 78;
  waiting.buffers = {{8ull << 20, false, 0}};
  waiting.triggers = "waiting for a START_TRACING trigger (bug) for up to 600000 ms from its start";
  EXPECT_EQ(FormatSessionList(SessionList{{waiting}, 0}),
            "session 5 'on-bug' (uid 0): waiting, attached to pid 78, 0s\n"
            "  config: 1 buffer (8 MiB ring); written at the end\n"
            "  triggers: waiting for a START_TRACING trigger (bug) for up to 600000 ms from its start\n"
            "  buffers: 0 KiB of 8 MiB held (0%)\n"
            "  losses so far: none\n");
}

class SessionsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_sessions_test_");
    ASSERT_FALSE(dir_.empty());
    loop_thread_ = std::make_unique<EventLoopThread>();
    service_ = std::make_unique<TracingService>(loop_thread_->loop());
    IpcServerOptions options;
    options.producer_socket_path = dir_ + "/producer.sock";
    options.consumer_socket_path = socket();
    auto server = IpcServer::Create(service_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(server.value());
  }
  void TearDown() override {
    consumers_.clear();
    server_.reset();
    service_.reset();
    loop_thread_.reset();
    testing::RemoveTempDir(dir_);
  }
  std::string socket() const { return dir_ + "/consumer.sock"; }

  // A session `key` started and detached as `sluice record --detach` leaves
  // it: sluiced writes `temp`, which the run that attaches puts at `path`.
  ::testing::AssertionResult StartDetached(const std::string& key, const perfetto::protos::TraceConfig& config,
                                           const std::string& path, const std::string& temp) {
    auto client = ConsumerIpcClient::Connect(socket());
    if (!client.ok()) return ::testing::AssertionFailure() << client.status().message();
    int fd = open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return ::testing::AssertionFailure() << "cannot create " << temp;
    SessionOptions options;
    options.key = key;
    options.output_path = path;
    options.output_temp_path = temp;
    Status enabled = (*client)->EnableTracing(config, fd, options);
    close(fd);
    if (!enabled.ok()) return ::testing::AssertionFailure() << enabled.message();
    Status detached = (*client)->Detach("");
    if (!detached.ok()) return ::testing::AssertionFailure() << detached.message();
    return ::testing::AssertionSuccess();
  }

  // A session of this process's uid, held open by a consumer connection.
  ConsumerIpcClient* StartSession(const std::string& key, perfetto::protos::TraceConfig config) {
    auto client = ConsumerIpcClient::Connect(socket());
    EXPECT_TRUE(client.ok());
    if (!client.ok()) return nullptr;
    SessionOptions options;
    options.key = key;
    int fd = -1;
    if (config.write_into_file()) fd = open((dir_ + "/" + key + ".pftrace").c_str(), O_WRONLY | O_CREAT, 0600);
    Status st = (*client)->EnableTracing(config, fd, options);
    if (fd >= 0) close(fd);
    EXPECT_TRUE(st.ok()) << st.message();
    consumers_.push_back(std::move(client.value()));
    return consumers_.back().get();
  }
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), sluice_);
    args.push_back("--consumer-socket");
    args.push_back(socket());
    return testing::RunToCompletion(args, dir_);
  }

  std::string sluice_, dir_;
  std::unique_ptr<EventLoopThread> loop_thread_;
  std::unique_ptr<TracingService> service_;
  std::unique_ptr<IpcServer> server_;
  std::vector<std::unique_ptr<ConsumerIpcClient>> consumers_;
};

TEST_F(SessionsCommandTest, ListsTheSessionsOfSluiced) {
  Result none = Run({"sessions"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "no tracing sessions\n");
  StartSession("listed", testing::MakeConfig(2048, "test.ds"));
  Result one = Run({"sessions"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  const std::string head = "session 1 'listed' (uid " + std::to_string(getuid()) +
                           "): recording, attached to pid " + std::to_string(getpid()) + ", ";
  EXPECT_EQ(one.out.rfind(head, 0), 0u) << one.out;
  EXPECT_NE(one.out.find("\n  config: 1 buffer (2 MiB ring); test.ds; written at the end\n"),
            std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("\n  buffers: 0 KiB of 2 MiB held (0%)\n  losses so far: none\n"),
            std::string::npos)
      << one.out;
}

TEST_F(SessionsCommandTest, SluicedNotRunningIsOneLine) {
  Result r = testing::RunToCompletion({sluice_, "sessions", "--consumer-socket", dir_ + "/none.sock"}, dir_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("sluice sessions: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  Result extra = Run({"sessions", "surplus"});
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_EQ(extra.err, "sluice sessions: unexpected argument 'surplus' (see sluice sessions --help)\n");
}

TEST_F(SessionsCommandTest, CloneWritesASnapshotAndTheSessionRecordsOn) {
  StartSession("snap", testing::MakeConfig(1024, "test.ds"));
  const std::string out = dir_ + "/snap.pftrace";
  for (int round = 0; round < 2; round++) {
    Result r = Run({"clone", "snap", "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind(out + ": snapshot of session 1 'snap', ", 0), 0u) << r.out;
    auto bytes = ReadFile(out);
    ASSERT_TRUE(bytes.ok());
    bool ok = false;
    std::vector<perfetto::protos::TracePacket> packets = testing::ParseTraceBytes(*bytes, &ok);
    ASSERT_TRUE(ok);
    ASSERT_EQ(packets.size(), 5u);  // Config, extension descriptor, clock snapshots, TraceStats.
    EXPECT_TRUE(packets.front().has_trace_config());
    EXPECT_TRUE(packets.back().has_trace_stats());
  }
  Result to_stdout = Run({"clone", "snap", "-o", "-"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.err.rfind("standard output: snapshot of session 1 'snap', ", 0), 0u) << to_stdout.err;
  bool ok = false;
  EXPECT_EQ(testing::ParseTraceBytes(to_stdout.out, &ok).size(), 5u);
  EXPECT_TRUE(ok);
  Result listed = Run({"sessions"});
  EXPECT_NE(listed.out.find("session 1 'snap' (uid " + std::to_string(getuid()) + "): recording"),
            std::string::npos)
      << listed.out;
}

TEST_F(SessionsCommandTest, CloneRefusalsAreOneLineEach) {
  auto config = testing::MakeConfig(1024, "test.ds");
  config.set_write_into_file(true);
  StartSession("streaming", config);
  StartSession("discarding", testing::MakeConfig(1024, "test.ds", /*discard=*/true));
  const std::string out = dir_ + "/x.pftrace";
  Result unknown = Run({"clone", "nope", "-o", out});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err, "sluice clone: no session 'nope' (sluice sessions lists them)\n");
  Result streaming = Run({"clone", "streaming", "-o", out});
  EXPECT_EQ(streaming.exit_code, 1);
  EXPECT_EQ(streaming.err,
            "sluice clone: session 'streaming' streams into its file (write_into_file): its buffers "
            "hold only what was not written yet; copy the file instead\n");
  Result discarding = Run({"clone", "discarding", "-o", out});
  EXPECT_EQ(discarding.exit_code, 1);
  EXPECT_NE(discarding.err.find("has a DISCARD buffer"), std::string::npos) << discarding.err;
  EXPECT_FALSE(PathExists(out));
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    EXPECT_FALSE(entry.path().filename().string().starts_with("x.pftrace")) << entry.path() << " left behind";
  Result no_key = Run({"clone", "-o", out});
  EXPECT_EQ(no_key.exit_code, 2);
  EXPECT_EQ(no_key.err, "sluice clone: no KEY given (sluice sessions lists them) (see sluice clone --help)\n");
  Result no_output = Run({"clone", "streaming"});
  EXPECT_EQ(no_output.exit_code, 2);
  EXPECT_EQ(no_output.err, "sluice clone: no output file: give -o FILE (see sluice clone --help)\n");
}

// `sluice record --attach=KEY` on a session detached by a client that left
// its file as `sluice record --detach` does: the run waits for the end
// (--stop: stops it), then renames the file sluiced wrote into place.
TEST_F(SessionsCommandTest, RecordAttachStopPutsTheDetachedSessionsFileInPlace) {
  const std::string path = dir_ + "/detached.pftrace";
  const std::string temp = path + ".recording-test01";
  ASSERT_TRUE(StartDetached("later", testing::MakeConfig(1024, "test.ds"), path, temp));
  Result unknown = Run({"record", "--attach=nope"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err, "sluice record: no session 'nope' (sluice sessions lists them)\n");

  Result r = Run({"record", "--attach=later", "--stop", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "sluice record: attached to session 'later' (stopping it)\n");
  EXPECT_NE(r.out.find("trace: " + path + " ("), std::string::npos) << r.out;
  EXPECT_FALSE(PathExists(temp));
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  bool ok = false;
  std::vector<perfetto::protos::TracePacket> packets = testing::ParseTraceBytes(*bytes, &ok);
  ASSERT_TRUE(ok);
  ASSERT_FALSE(packets.empty());
  EXPECT_TRUE(packets.front().has_trace_config());
  EXPECT_TRUE(packets.back().has_trace_stats());
  // Collected: the session is gone, and its key free again.
  EXPECT_EQ(Run({"sessions"}).out, "no tracing sessions\n");
}

// A detached START_TRACING session whose trigger never came: sluiced wrote
// nothing, and the run that attaches says so (exit 3), removes the empty
// temporary file and leaves the path as it was.
TEST_F(SessionsCommandTest, RecordAttachToASessionThatGotNoTriggerExits3) {
  const std::string path = dir_ + "/waiting.pftrace";
  const std::string temp = path + ".recording-test02";
  ASSERT_TRUE(WriteFileAtomically(path, "keep me").ok());
  perfetto::protos::TraceConfig config = testing::MakeConfig(1024, "test.ds");
  auto* triggers = config.mutable_trigger_config();
  triggers->set_trigger_mode(perfetto::protos::TraceConfig::TriggerConfig::START_TRACING);
  triggers->set_trigger_timeout_ms(200);
  triggers->add_triggers()->set_name("bug");
  ASSERT_TRUE(StartDetached("on-bug", config, path, temp));
  Result r = Run({"record", "--attach=on-bug", "-q"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("sluice record: session 'on-bug': no trigger fired: none of the session's triggers (bug) "
                       "fired within trigger_timeout_ms (200 ms); nothing was recorded; " + path + " was not written"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(PathExists(temp));
  EXPECT_EQ(ReadFile(path).value_or(""), "keep me");
}

TEST_F(SessionsCommandTest, RecordAttachToASessionSomeoneHasIsRefused) {
  StartSession("held", testing::MakeConfig(1024, "test.ds"));
  Result r = Run({"record", "--attach=held", "--stop"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sluice record: session 'held' is not detached: its consumer (pid " + std::to_string(getpid()) +
                       ") has it; attach once it detached\n");
}

}  // namespace
}  // namespace sluice
