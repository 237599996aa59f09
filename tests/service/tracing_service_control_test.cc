// Tests of service/tracing_service_control.cc in one process, no kernel:
// detach and attach, sessions whose consumer goes away, ListSessions, clones
// (flushed first, undisturbing, repeatable), and the requests they refuse.
#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "perfetto/common/trace_stats.pb.h"
#include "service/tracing_service.h"
#include "shm/base/file_util.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

using perfetto::protos::TraceConfig;
using perfetto::protos::TracePacket;
using testing::MakeConfig;
using testing::ReadAllPackets;
using testing::SeqRange;
using testing::TestPacketId;
using testing::TestProducer;
using testing::WaitUntil;

// What a trace holds: each writer's packet numbers in order, the service
// packets, and whether the TraceStats came last.
struct Contents {
  std::map<uint32_t, std::vector<uint32_t>> seqs;  // writer -> packet numbers
  std::map<uint32_t, uint32_t> sequence_id;        // writer -> trusted sequence id
  int config_packets = 0;
  int stats_packets = 0;
  bool stats_last = false;
  perfetto::protos::TraceStats stats;
};

Contents Summarize(const std::vector<TracePacket>& packets) {
  Contents c;
  for (size_t i = 0; i < packets.size(); i++) {
    const TracePacket& p = packets[i];
    if (p.has_trace_config()) c.config_packets++;
    if (p.has_trace_stats()) {
      c.stats_packets++;
      c.stats = p.trace_stats();
      c.stats_last = i + 1 == packets.size();
    }
    TestPacketId id;
    if (testing::ParseTestPacket(p, &id)) {
      c.seqs[id.writer].push_back(id.seq);
      c.sequence_id[id.writer] = p.trusted_packet_sequence_id();
    }
  }
  return c;
}

// A consumer the test drives by hand with chosen credentials (another
// user's, root's): the service's non-blocking API.
class FakePeerConsumer : public Consumer {
 public:
  FakePeerConsumer(TracingService* service, uid_t uid) : service_(service) {
    PeerCredentials peer;
    peer.uid = uid;
    peer.gid = uid;
    peer.pid = 4242;
    id_ = service_->AddConsumer(this, peer);
  }
  ~FakePeerConsumer() override { service_->RemoveConsumer(id_); }
  void OnTracingDisabled(const std::string&) override {}
  ConsumerId id() const { return id_; }
  // CloneSession's answer.
  StatusOr<CloneResult> Clone(const std::string& key) {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<StatusOr<CloneResult>> answer;
    service_->CloneSession(id_, key, [&](StatusOr<CloneResult> r) {
      std::lock_guard<std::mutex> lock(mu);
      answer = std::move(r);
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return answer.has_value(); });
    return *answer;
  }

 private:
  TracingService* service_;
  ConsumerId id_ = 0;
};

class TracingServiceControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_thread_ = std::make_unique<EventLoopThread>();
    service_ = std::make_unique<TracingService>(loop_thread_->loop());
    ASSERT_TRUE(producer_.ConnectTo(service_.get(), "test-producer"));
    char path[] = "/tmp/sluice-control-test-XXXXXX";
    output_fd_ = mkstemp(path);
    ASSERT_GE(output_fd_, 0);
    output_path_ = path;
  }
  void TearDown() override {
    producer_.set_on_flush(nullptr);  // Waits for a flush using writer_.
    writer_.reset();
    producer_.Detach();
    service_.reset();
    loop_thread_.reset();
    if (output_fd_ >= 0) close(output_fd_);
    unlink(output_path_.c_str());
  }

  // Starts `config` as `consumer`'s session (key, output fd) and waits for
  // the producer's data source; writer_ writes into it.
  void Start(ConsumerEndpoint* consumer, const TraceConfig& config, const std::string& key) {
    SessionOptions options;
    options.key = key;
    options.output_path = "/somewhere/trace.pftrace";
    options.output_temp_path = output_path_;
    ASSERT_TRUE(consumer->EnableTracing(config, output_fd_, options).ok());
    TestProducer::Started started;
    ASSERT_TRUE(producer_.WaitForStart(&started));
    writer_ = producer_.arbiter()->CreateTraceWriter(started.config.target_buffer());
  }
  // Packets [begin, end) on writer_, left in its chunk (not flushed).
  void Write(uint32_t begin, uint32_t end) {
    for (uint32_t i = begin; i < end; i++) testing::WriteTestPacket(writer_.get(), {1, 0, i});
  }
  // The writer's chunk goes out only when the service flushes (a clone, a
  // stop), as a real data source's would.
  void FlushWriterOnServiceFlush() {
    producer_.set_on_flush([this] {
      if (writer_) writer_->Flush();
    });
  }
  Contents OutputFile() {
    auto bytes = ReadFile(output_path_);
    EXPECT_TRUE(bytes.ok());
    bool ok = false;
    Contents c = Summarize(testing::ParseTraceBytes(bytes.ok() ? *bytes : "", &ok));
    EXPECT_TRUE(ok) << "not a trace";
    return c;
  }
  std::vector<SessionInfo> Sessions() {
    auto consumer = service_->ConnectConsumer();
    auto list = consumer->ListSessions();
    EXPECT_TRUE(list.ok());
    return list.ok() ? list->sessions : std::vector<SessionInfo>{};
  }
  static TraceConfig Streaming(uint32_t buffer_kb) {
    TraceConfig config = MakeConfig(buffer_kb, "test.ds");
    config.set_write_into_file(true);
    config.set_file_write_period_ms(100);
    return config;
  }

  std::unique_ptr<EventLoopThread> loop_thread_;
  std::unique_ptr<TracingService> service_;
  TestProducer producer_;
  std::unique_ptr<TraceWriter> writer_;
  int output_fd_ = -1;
  std::string output_path_;
};

// ---- Detach and attach ------------------------------------------------------------

TEST_F(TracingServiceControlTest, DetachedStreamingSessionRunsOnAndAttachStopsIt) {
  FlushWriterOnServiceFlush();
  {
    auto consumer = service_->ConnectConsumer();
    Start(consumer.get(), Streaming(1024), "");
    Write(0, 100);
    ASSERT_TRUE(consumer->Detach("night-run").ok());
    // This consumer has no session now; it goes away and the session stays.
    EXPECT_FALSE(consumer->GetTraceStats().ok());
  }
  std::vector<SessionInfo> listed = Sessions();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, "night-run");
  EXPECT_TRUE(listed[0].detached);
  EXPECT_EQ(listed[0].state, SessionInfo::State::kStarted);
  EXPECT_EQ(listed[0].consumer_pid, 0);
  EXPECT_EQ(listed[0].owner_uid, getuid());
  EXPECT_TRUE(listed[0].write_into_file);
  EXPECT_EQ(listed[0].data_sources, std::vector<std::string>{"test.ds"});
  EXPECT_EQ(listed[0].output_path, "/somewhere/trace.pftrace");
  EXPECT_EQ(listed[0].output_temp_path, output_path_);
  Write(100, 200);

  auto attached = service_->ConnectConsumer();
  auto info = attached->Attach("night-run");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->info.key, "night-run");
  EXPECT_EQ(info->info.state, SessionInfo::State::kStarted);
  EXPECT_TRUE(info->config.write_into_file());
  EXPECT_EQ(info->config.buffers(0).size_kb(), 1024u);
  EXPECT_FALSE(attached->WaitForTracingDisabled(0));
  ASSERT_TRUE(attached->DisableTracing().ok());
  std::string error = "unset";
  ASSERT_TRUE(attached->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "");
  ASSERT_TRUE(attached->FreeBuffers().ok());
  EXPECT_TRUE(Sessions().empty());

  Contents file = OutputFile();
  EXPECT_EQ(file.seqs[0], SeqRange(0, 200));
  EXPECT_EQ(file.config_packets, 1);
  EXPECT_EQ(file.stats_packets, 1);
  EXPECT_TRUE(file.stats_last);
}

TEST_F(TracingServiceControlTest, DetachedRingSessionEndsAloneIsWrittenAndWaitsForAttach) {
  FlushWriterOnServiceFlush();
  TraceConfig config = MakeConfig(1024, "test.ds");
  config.set_duration_ms(300);
  {
    auto consumer = service_->ConnectConsumer();
    Start(consumer.get(), config, "ring");
    Write(0, 50);
    ASSERT_TRUE(consumer->Detach("").ok());  // The key given at EnableTracing.
  }
  // duration_ms ends it; nobody is attached, so sluiced writes the file.
  ASSERT_TRUE(WaitUntil([&] {
    std::vector<SessionInfo> s = Sessions();
    return s.size() == 1 && s[0].state == SessionInfo::State::kEnded && s[0].buffers[0].bytes_held == 0;
  }));
  SessionInfo ended = Sessions()[0];
  EXPECT_TRUE(ended.detached);
  EXPECT_GT(ended.file_bytes, 50u * testing::kTestPacketBytes);
  Contents file = OutputFile();
  EXPECT_EQ(file.seqs[0], SeqRange(0, 50));
  EXPECT_TRUE(file.stats_last);
  // Its buffers are freed; the key stays taken until someone collects it.
  auto other = service_->ConnectConsumer();
  SessionOptions same_key;
  same_key.key = "ring";
  Status in_use = other->EnableTracing(MakeConfig(64, "test.ds"), -1, same_key);
  EXPECT_FALSE(in_use.ok());
  EXPECT_NE(in_use.message().find("'ring' is in use"), std::string::npos) << in_use.message();

  auto collector = service_->ConnectConsumer();
  auto info = collector->Attach("ring");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->info.state, SessionInfo::State::kEnded);
  std::string error = "unset";
  EXPECT_TRUE(collector->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "");
  auto stats = collector->GetTraceStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->buffer_stats_size(), 1);
  EXPECT_FALSE(collector->ReadBuffers([](std::string_view) {}).ok());  // Read the file.
  ASSERT_TRUE(collector->FreeBuffers().ok());
  EXPECT_TRUE(Sessions().empty());
}

TEST_F(TracingServiceControlTest, AttachedRingSessionIsStillWrittenByTheServiceAtTheStop) {
  FlushWriterOnServiceFlush();
  {
    auto consumer = service_->ConnectConsumer();
    Start(consumer.get(), MakeConfig(1024, "test.ds"), "ring");
    Write(0, 30);
    ASSERT_TRUE(consumer->Detach("").ok());
  }
  auto attached = service_->ConnectConsumer();
  ASSERT_TRUE(attached->Attach("ring").ok());
  Write(30, 60);
  Status refused = attached->ReadBuffers([](std::string_view) {});
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("sluiced writes this session into its file"), std::string::npos);
  ASSERT_TRUE(attached->DisableTracing().ok());
  std::string error = "unset";
  ASSERT_TRUE(attached->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "");
  // Told once the file is complete.
  Contents file = OutputFile();
  EXPECT_EQ(file.seqs[0], SeqRange(0, 60));
  EXPECT_TRUE(file.stats_last);
  ASSERT_TRUE(attached->FreeBuffers().ok());
  EXPECT_TRUE(Sessions().empty());
}

TEST_F(TracingServiceControlTest, ConsumerGoneWithoutDetachEndsTheStreamingSessionCleanly) {
  FlushWriterOnServiceFlush();
  {
    auto consumer = service_->ConnectConsumer();
    Start(consumer.get(), Streaming(1024), "");
    Write(0, 120);
  }  // Gone without Detach (a killed `sluice record --daemon`).
  ASSERT_TRUE(WaitUntil([&] { return Sessions().empty(); }));
  Contents file = OutputFile();
  EXPECT_EQ(file.seqs[0], SeqRange(0, 120));  // Flushed at the stop: nothing lost.
  EXPECT_EQ(file.stats_packets, 1);
  EXPECT_TRUE(file.stats_last);
  EXPECT_EQ(file.stats.final_flush_outcome(), perfetto::protos::TraceStats::FINAL_FLUSH_SUCCEEDED);
}

TEST_F(TracingServiceControlTest, ConsumerGoneWithoutDetachWritesTheRingSessionItWouldHaveRead) {
  FlushWriterOnServiceFlush();
  {
    auto consumer = service_->ConnectConsumer();
    Start(consumer.get(), MakeConfig(1024, "test.ds"), "");
    Write(0, 80);
  }
  ASSERT_TRUE(WaitUntil([&] { return Sessions().empty(); }));
  Contents file = OutputFile();
  EXPECT_EQ(file.seqs[0], SeqRange(0, 80));
  EXPECT_TRUE(file.stats_last);
}

TEST_F(TracingServiceControlTest, ConsumerGoneAfterItReadTheRingSessionLeavesItsFileAlone) {
  auto consumer = service_->ConnectConsumer();
  Start(consumer.get(), MakeConfig(1024, "test.ds"), "");
  Write(0, 10);
  writer_->Flush();
  std::string error;
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(Summarize(ReadAllPackets(consumer.get())).seqs[0], SeqRange(0, 10));
  consumer.reset();  // Read, not freed: the reader owns the file.
  ASSERT_TRUE(WaitUntil([&] { return Sessions().empty(); }));
  auto bytes = ReadFile(output_path_);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, "");
}

// ---- Clones -----------------------------------------------------------------------

TEST_F(TracingServiceControlTest, ClonesAreFlushedRepeatableAndLeaveTheSessionWhole) {
  FlushWriterOnServiceFlush();
  auto owner = service_->ConnectConsumer();
  Start(owner.get(), MakeConfig(4096, "test.ds"), "snap");
  Write(0, 50);  // Still in the writer's chunk: only the clone's flush commits it.
  auto stats_before = owner->GetTraceStats();
  ASSERT_TRUE(stats_before.ok());
  EXPECT_EQ(stats_before->buffer_stats(0).chunks_written(), 0u);

  auto cloner = service_->ConnectConsumer();
  auto first = cloner->CloneSession("snap");
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->flushed);
  std::vector<TracePacket> clone1 = ReadAllPackets(cloner.get());
  ASSERT_TRUE(cloner->FreeBuffers().ok());
  Contents c1 = Summarize(clone1);
  EXPECT_EQ(c1.seqs[0], SeqRange(0, 50));
  EXPECT_EQ(c1.config_packets, 1);
  EXPECT_EQ(c1.stats_packets, 1);
  EXPECT_TRUE(c1.stats_last);
  EXPECT_EQ(c1.stats.sluice_service_stats().snapshot_of_session(), first->source_id);

  // The source was not read by the clone: what the clone read (its own
  // stats) is still unread there.
  auto stats_after = owner->GetTraceStats();
  ASSERT_TRUE(stats_after.ok());
  EXPECT_EQ(c1.stats.buffer_stats(0).chunks_written(), stats_after->buffer_stats(0).chunks_written());
  EXPECT_EQ(c1.stats.buffer_stats(0).chunks_read(), c1.stats.buffer_stats(0).chunks_written());
  EXPECT_EQ(stats_after->buffer_stats(0).chunks_read(), 0u);
  EXPECT_EQ(stats_after->buffer_stats(0).bytes_read(), 0u);
  EXPECT_GT(stats_after->buffer_stats(0).chunks_written(), 0u);

  Write(50, 120);
  auto second = cloner->CloneSession("snap");
  ASSERT_TRUE(second.ok()) << second.status().message();
  Contents c2 = Summarize(ReadAllPackets(cloner.get()));
  ASSERT_TRUE(cloner->FreeBuffers().ok());
  EXPECT_EQ(c2.seqs[0], SeqRange(0, 120));
  EXPECT_EQ(c2.sequence_id[0], c1.sequence_id[0]);

  Write(120, 150);
  std::string error;
  ASSERT_TRUE(owner->DisableTracing().ok());
  ASSERT_TRUE(owner->WaitForTracingDisabled(60000, &error));
  Contents all = Summarize(ReadAllPackets(owner.get()));
  EXPECT_EQ(all.seqs[0], SeqRange(0, 150));
  EXPECT_EQ(all.sequence_id[0], c1.sequence_id[0]);  // Same trusted ids as the clones.
  EXPECT_TRUE(all.stats_last);
}

TEST_F(TracingServiceControlTest, CloneOfAWrappedRingHoldsAGapFreeSuffix) {
  FlushWriterOnServiceFlush();
  auto owner = service_->ConnectConsumer();
  Start(owner.get(), MakeConfig(64, "test.ds"), "small");
  Write(0, 2000);  // About 16 times the ring.
  auto cloner = service_->ConnectConsumer();
  ASSERT_TRUE(cloner->CloneSession("small").ok());
  Contents c = Summarize(ReadAllPackets(cloner.get()));
  const std::vector<uint32_t>& got = c.seqs[0];
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got, SeqRange(got.front(), 2000));
  EXPECT_GT(got.front(), 0u);
  EXPECT_GT(c.stats.buffer_stats(0).chunks_overwritten(), 0u);
}

TEST_F(TracingServiceControlTest, CloneOfADetachedSessionByItsUniqueSessionName) {
  FlushWriterOnServiceFlush();
  TraceConfig config = MakeConfig(1024, "test.ds");
  config.set_unique_session_name("by-name");
  auto owner = service_->ConnectConsumer();
  Start(owner.get(), config, "");
  Write(0, 5);
  auto cloner = service_->ConnectConsumer();
  ASSERT_TRUE(cloner->CloneSession("by-name").ok());
  EXPECT_EQ(Summarize(ReadAllPackets(cloner.get())).seqs[0], SeqRange(0, 5));
  // unique_session_name: a second session of that name is refused.
  auto second = service_->ConnectConsumer();
  Status refused = second->EnableTracing(config);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("'by-name' exists already"), std::string::npos) << refused.message();
}

// A session with neither key nor name is cloned by its id ("#ID", as
// `sluice sessions` lists it and `perfetto --clone ID` names it); a key
// cannot start with '#'.
TEST_F(TracingServiceControlTest, CloneOfASessionByItsId) {
  FlushWriterOnServiceFlush();
  auto owner = service_->ConnectConsumer();
  Start(owner.get(), MakeConfig(1024, "test.ds"), "");
  Write(0, 5);
  auto sessions = owner->ListSessions();
  ASSERT_TRUE(sessions.ok());
  ASSERT_EQ(sessions->sessions.size(), 1u);
  const std::string by_id = "#" + std::to_string(sessions->sessions[0].id);
  auto cloner = service_->ConnectConsumer();
  ASSERT_TRUE(cloner->CloneSession(by_id).ok());
  EXPECT_EQ(Summarize(ReadAllPackets(cloner.get())).seqs[0], SeqRange(0, 5));
  auto other = service_->ConnectConsumer();
  EXPECT_FALSE(other->CloneSession("#999999").ok());
  EXPECT_FALSE(other->CloneSession("#x").ok());
  SessionOptions options;
  options.key = "#1";
  auto keyed = service_->ConnectConsumer();
  EXPECT_FALSE(keyed->EnableTracing(MakeConfig(64, "test.ds"), -1, options).ok());
}

TEST_F(TracingServiceControlTest, ListSessionsShowsFillLossesAndClones) {
  auto owner = service_->ConnectConsumer();
  Start(owner.get(), MakeConfig(64, "test.ds"), "busy");
  Write(0, 1000);
  writer_->Flush();
  auto cloner = service_->ConnectConsumer();
  ASSERT_TRUE(cloner->CloneSession("busy").ok());
  std::vector<SessionInfo> s = Sessions();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].key, "busy");
  EXPECT_EQ(s[0].consumer_pid, getpid());
  ASSERT_EQ(s[0].buffers.size(), 1u);
  EXPECT_EQ(s[0].buffers[0].size_bytes, 64u * 1024);
  EXPECT_FALSE(s[0].buffers[0].discard);
  EXPECT_GT(s[0].buffers[0].bytes_held, 48u * 1024);
  EXPECT_LE(s[0].buffers[0].bytes_held, 64u * 1024);
  EXPECT_GT(s[0].chunks_overwritten, 0u);
  EXPECT_EQ(s[1].cloned_from, s[0].id);
  EXPECT_EQ(s[1].state, SessionInfo::State::kEnded);
  EXPECT_EQ(s[1].key, "");
  EXPECT_EQ(s[1].buffers[0].bytes_held, s[0].buffers[0].bytes_held);
}

// ---- Refusals ---------------------------------------------------------------------

TEST_F(TracingServiceControlTest, UnknownKeysAreRefusedNamingTheKey) {
  auto consumer = service_->ConnectConsumer();
  auto attach = consumer->Attach("nope");
  ASSERT_FALSE(attach.ok());
  EXPECT_EQ(attach.status().message(), "no session 'nope' (sluice sessions lists them)");
  auto clone = consumer->CloneSession("nope");
  ASSERT_FALSE(clone.ok());
  EXPECT_EQ(clone.status().message(), "no session 'nope' (sluice sessions lists them)");
}

TEST_F(TracingServiceControlTest, KeysAreCheckedAndUnique) {
  auto first = service_->ConnectConsumer();
  Start(first.get(), MakeConfig(64, "test.ds"), "taken");
  auto second = service_->ConnectConsumer();
  SessionOptions options;
  options.key = "taken";
  Status st = second->EnableTracing(MakeConfig(64, "test.ds"), -1, options);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the session key 'taken' is in use (session "), std::string::npos)
      << st.message();
  for (const std::string& bad : std::vector<std::string>{"has space", "-leading-dash", std::string(65, 'k'), "sl/ash"}) {
    options.key = bad;
    st = second->EnableTracing(MakeConfig(64, "test.ds"), -1, options);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("bad session key"), std::string::npos) << st.message();
  }
  // Detaching under a key in use, or under another key than the session's.
  options.key = "";
  ASSERT_TRUE(second->EnableTracing(MakeConfig(64, "test.ds"), output_fd_, options).ok());
  EXPECT_FALSE(second->Detach("taken").ok());
  EXPECT_FALSE(second->Detach("").ok());  // No key at all.
  EXPECT_FALSE(first->Detach("other").ok());
  EXPECT_TRUE(first->Detach("taken").ok());
}

TEST_F(TracingServiceControlTest, AttachingTwiceOrToAnAttachedSessionIsRefused) {
  {
    auto consumer = service_->ConnectConsumer();
    Start(consumer.get(), MakeConfig(64, "test.ds"), "once");
    ASSERT_TRUE(consumer->Detach("").ok());
  }
  auto a = service_->ConnectConsumer();
  ASSERT_TRUE(a->Attach("once").ok());
  auto b = service_->ConnectConsumer();
  auto again = b->Attach("once");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("is not detached: its consumer (pid "), std::string::npos)
      << again.status().message();
  // A consumer with a session cannot take a second one.
  auto twice = a->Attach("once");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("has a tracing session already"), std::string::npos);
  // The attached consumer may detach it again.
  EXPECT_TRUE(a->Detach("").ok());
  EXPECT_TRUE(b->Attach("once").ok());
}

TEST_F(TracingServiceControlTest, DetachNeedsAFileTheServiceCanWrite) {
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(64, "test.ds")).ok());  // No fd.
  Status st = consumer->Detach("no-file");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no file to write this session into"), std::string::npos) << st.message();
  EXPECT_FALSE(consumer->Detach("").ok());
}

TEST_F(TracingServiceControlTest, ClonesOfStreamingDiscardOrStoppedSessionsAreRefused) {
  auto cloner = service_->ConnectConsumer();
  {
    auto streaming = service_->ConnectConsumer();
    Start(streaming.get(), Streaming(64), "stream");
    auto r = cloner->CloneSession("stream");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("streams into its file (write_into_file)"), std::string::npos)
        << r.status().message();
    ASSERT_TRUE(streaming->FreeBuffers().ok());
  }
  {
    auto discard = service_->ConnectConsumer();
    Start(discard.get(), MakeConfig(64, "test.ds", /*discard=*/true), "discard");
    auto r = cloner->CloneSession("discard");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("has a DISCARD buffer (buffers[0])"), std::string::npos)
        << r.status().message();
    ASSERT_TRUE(discard->FreeBuffers().ok());
  }
  {
    auto deferred = service_->ConnectConsumer();
    TraceConfig config = MakeConfig(64, "test.ds");
    config.set_deferred_start(true);
    SessionOptions options;
    options.key = "later";
    ASSERT_TRUE(deferred->EnableTracing(config, -1, options).ok());
    auto r = cloner->CloneSession("later");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("not started yet"), std::string::npos) << r.status().message();
  }
  // A consumer that holds a session (a clone it has not freed) cannot clone.
  auto owner = service_->ConnectConsumer();
  Start(owner.get(), MakeConfig(64, "test.ds"), "ok");
  ASSERT_TRUE(cloner->CloneSession("ok").ok());
  auto r = cloner->CloneSession("ok");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("FreeBuffers first"), std::string::npos);
  // Nor may a clone be detached.
  EXPECT_FALSE(cloner->Detach("clone-key").ok());
}

TEST_F(TracingServiceControlTest, OnlyTheOwnerOrRootMayAttachOrCloneOrSeeASession) {
  {
    auto consumer = service_->ConnectConsumer();  // This process's uid.
    Start(consumer.get(), MakeConfig(64, "test.ds"), "mine");
    ASSERT_TRUE(consumer->Detach("").ok());
  }
  const uid_t other_uid = getuid() + 1000;
  FakePeerConsumer stranger(service_.get(), other_uid);
  auto attach = service_->Attach(stranger.id(), "mine");
  ASSERT_FALSE(attach.ok());
  EXPECT_EQ(attach.status().message(),
            "session 'mine' belongs to uid " + std::to_string(getuid()) +
                "; only that user or root may attach to it");
  auto clone = stranger.Clone("mine");
  ASSERT_FALSE(clone.ok());
  EXPECT_NE(clone.status().message().find("only that user or root may clone it"), std::string::npos);
  SessionList hidden = service_->ListSessions(stranger.id());
  EXPECT_TRUE(hidden.sessions.empty());
  EXPECT_EQ(hidden.other_users, 1u);

  if (getuid() != 0) {
    FakePeerConsumer root(service_.get(), 0);
    EXPECT_EQ(service_->ListSessions(root.id()).sessions.size(), 1u);
    EXPECT_TRUE(root.Clone("mine").ok());
  }
}

}  // namespace
}  // namespace sluice
