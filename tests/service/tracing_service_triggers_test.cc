// Tests of service/tracing_service_triggers.cc in one process, no kernel:
// START_TRACING, STOP_TRACING and CLONE_SNAPSHOT sessions acting on triggers
// fired by another producer, the Trigger packets in their traces, what a
// session that waited in vain writes (nothing), the filters and limits of a
// trigger, and the configs the service refuses.
#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
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
using TriggerConfig = TraceConfig::TriggerConfig;

// A config of `mode` waiting up to timeout_ms for the trigger `name`.
TraceConfig TriggerSessionConfig(TriggerConfig::TriggerMode mode, const std::string& name,
                                 uint32_t timeout_ms, uint32_t stop_delay_ms = 0) {
  TraceConfig config = MakeConfig(1024, "test.ds");
  auto* triggers = config.mutable_trigger_config();
  triggers->set_trigger_mode(mode);
  triggers->set_trigger_timeout_ms(timeout_ms);
  auto* trigger = triggers->add_triggers();
  trigger->set_name(name);
  trigger->set_stop_delay_ms(stop_delay_ms);
  return config;
}

std::vector<uint32_t> TestPacketSeqs(const std::vector<TracePacket>& packets) {
  std::vector<uint32_t> seqs;
  for (const TracePacket& p : packets) {
    TestPacketId id;
    if (testing::ParseTestPacket(p, &id)) seqs.push_back(id.seq);
  }
  return seqs;
}

std::vector<const perfetto::protos::Trigger*> Triggers(const std::vector<TracePacket>& packets) {
  std::vector<const perfetto::protos::Trigger*> triggers;
  for (const TracePacket& p : packets)
    if (p.has_trigger()) triggers.push_back(&p.trigger());
  return triggers;
}

class TracingServiceTriggersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_thread_ = std::make_unique<EventLoopThread>();
    service_ = std::make_unique<TracingService>(loop_thread_->loop());
    ASSERT_TRUE(producer_.ConnectTo(service_.get(), "test-producer"));
    // The writer's chunk goes out when the service flushes, as a data
    // source's would.
    producer_.set_on_flush([this] {
      if (writer_) writer_->Flush();
    });
    ASSERT_TRUE(trigger_app_.ConnectTo(service_.get(), "trigger-app", ""));
  }
  void TearDown() override {
    producer_.set_on_flush(nullptr);
    writer_.reset();
    producer_.Detach();
    trigger_app_.Detach();
    service_.reset();
    loop_thread_.reset();
  }

  void WaitForStartAndWriter() {
    TestProducer::Started started;
    ASSERT_TRUE(producer_.WaitForStart(&started, 60000));
    writer_ = producer_.arbiter()->CreateTraceWriter(started.config.target_buffer());
  }
  void Write(uint32_t begin, uint32_t end) {
    for (uint32_t i = begin; i < end; i++) testing::WriteTestPacket(writer_.get(), {1, 0, i});
  }
  std::vector<SessionInfo> Sessions() {
    auto consumer = service_->ConnectConsumer();
    auto list = consumer->ListSessions();
    EXPECT_TRUE(list.ok());
    return list.ok() ? list->sessions : std::vector<SessionInfo>{};
  }

  std::unique_ptr<EventLoopThread> loop_thread_;
  std::unique_ptr<TracingService> service_;
  TestProducer producer_;     // Runs test.ds.
  TestProducer trigger_app_;  // Fires triggers.
  std::unique_ptr<TraceWriter> writer_;
};

TEST_F(TracingServiceTriggersTest, StartTracingWaitsForItsTriggerThenRecordsAndNamesIt) {
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(TriggerSessionConfig(TriggerConfig::START_TRACING, "go", 600000)).ok());
  // Set up, not started: no data source runs until the trigger.
  ASSERT_EQ(Sessions().size(), 1u);
  EXPECT_EQ(Sessions()[0].state, SessionInfo::State::kConfigured);
  EXPECT_EQ(Sessions()[0].triggers, "waiting for a START_TRACING trigger (go) for up to 600000 ms from its start");
  EXPECT_EQ(trigger_app_.FireTriggers({"other"}), 0);
  EXPECT_EQ(Sessions()[0].state, SessionInfo::State::kConfigured);

  EXPECT_EQ(trigger_app_.FireTriggers({"other", "go"}), 1);
  WaitForStartAndWriter();
  EXPECT_EQ(Sessions()[0].state, SessionInfo::State::kStarted);
  EXPECT_EQ(Sessions()[0].triggers, "START_TRACING: 1 received ('go' from trigger-app)");
  Write(0, 40);
  ASSERT_TRUE(consumer->DisableTracing().ok());
  std::string error = "unset";
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "");
  std::vector<TracePacket> packets = ReadAllPackets(consumer.get());
  EXPECT_EQ(TestPacketSeqs(packets), SeqRange(0, 40));
  auto triggers = Triggers(packets);
  ASSERT_EQ(triggers.size(), 1u);
  EXPECT_EQ(triggers[0]->trigger_name(), "go");
  EXPECT_EQ(triggers[0]->producer_name(), "trigger-app");
  EXPECT_EQ(triggers[0]->trusted_producer_uid(), static_cast<int32_t>(getuid()));
}

TEST_F(TracingServiceTriggersTest, StartTracingWithoutItsTriggerEndsAtTheTimeoutWithNothing) {
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(TriggerSessionConfig(TriggerConfig::START_TRACING, "go", 100)).ok());
  std::string error;
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000, &error));
  EXPECT_TRUE(error.starts_with(kNoTriggerError)) << error;
  EXPECT_NE(error.find("(go)"), std::string::npos) << error;
  EXPECT_TRUE(ReadAllPackets(consumer.get()).empty());
  EXPECT_TRUE(producer_.WaitFor([](TestProducer& p) { return p.setups == 0; }, 0));
}

TEST_F(TracingServiceTriggersTest, StopTracingHoldsItsDataBackAndStopsAfterTheStopDelay) {
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(TriggerSessionConfig(TriggerConfig::STOP_TRACING, "stop", 600000, 50)).ok());
  WaitForStartAndWriter();
  Write(0, 30);
  ASSERT_TRUE(consumer->Flush().ok());
  // While it waits for its trigger a reader gets nothing, not even the header.
  EXPECT_TRUE(ReadAllPackets(consumer.get()).empty());
  EXPECT_EQ(trigger_app_.FireTriggers({"stop"}), 1);
  std::string error = "unset";
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "");
  std::vector<TracePacket> packets = ReadAllPackets(consumer.get());
  EXPECT_EQ(TestPacketSeqs(packets), SeqRange(0, 30));
  ASSERT_EQ(Triggers(packets).size(), 1u);
  EXPECT_EQ(Triggers(packets)[0]->trigger_name(), "stop");
  EXPECT_TRUE(packets.back().has_trace_stats());
}

TEST_F(TracingServiceTriggersTest, StreamingStopTracingWithoutItsTriggerWritesNothing) {
  char path[] = "/tmp/sluice-triggers-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  TraceConfig config = TriggerSessionConfig(TriggerConfig::STOP_TRACING, "stop", 300);
  config.set_write_into_file(true);
  config.set_file_write_period_ms(100);
  auto consumer = service_->ConnectConsumer();
  // The trigger timeout may end the session (its final flush) while this
  // thread writes: the writer is flushed here, never by the service's flush.
  producer_.set_on_flush(nullptr);
  ASSERT_TRUE(consumer->EnableTracing(config, fd).ok());
  WaitForStartAndWriter();
  Write(0, 30);
  writer_->Flush();
  std::string error;
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000, &error));
  EXPECT_TRUE(error.starts_with(kNoTriggerError)) << error;
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 0u);
  close(fd);
  unlink(path);
}

TEST_F(TracingServiceTriggersTest, CloneSnapshotTellsTheConsumerAndTheCloneNamesTheTrigger) {
  auto consumer = service_->ConnectConsumer();
  SessionOptions options;
  options.key = "snapshots";
  ASSERT_TRUE(consumer
                  ->EnableTracing(TriggerSessionConfig(TriggerConfig::CLONE_SNAPSHOT, "snap", 600000), -1,
                                  options)
                  .ok());
  WaitForStartAndWriter();
  Write(0, 20);
  EXPECT_EQ(trigger_app_.FireTriggers({"snap"}), 1);
  // The consumer's wait returns early with the trigger to act on.
  ASSERT_TRUE(WaitUntil([&] {
    EXPECT_FALSE(consumer->WaitForTracingDisabled(100));
    std::vector<std::string> fired = consumer->TakeCloneTriggers();
    if (fired.empty()) return false;
    EXPECT_EQ(fired, std::vector<std::string>{"snap"});
    return true;
  }));
  auto cloner = service_->ConnectConsumer();
  auto cloned = cloner->CloneSession("snapshots");
  ASSERT_TRUE(cloned.ok()) << cloned.status().message();
  std::vector<TracePacket> snapshot = ReadAllPackets(cloner.get());
  EXPECT_EQ(TestPacketSeqs(snapshot), SeqRange(0, 20));
  ASSERT_EQ(Triggers(snapshot).size(), 1u);
  EXPECT_EQ(Triggers(snapshot)[0]->trigger_name(), "snap");
  // The session records on.
  EXPECT_EQ(Sessions()[0].state, SessionInfo::State::kStarted);
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000));
}

TEST_F(TracingServiceTriggersTest, ProducerNameRegexAndLimitsDecideWhoseTriggersCount) {
  TraceConfig config = TriggerSessionConfig(TriggerConfig::START_TRACING, "go", 600000);
  config.mutable_trigger_config()->mutable_triggers(0)->set_producer_name_regex("trusted-.*");
  auto* once = config.mutable_trigger_config()->add_triggers();
  once->set_name("once");
  once->set_max_per_24_h(1);
  auto* never = config.mutable_trigger_config()->add_triggers();
  never->set_name("never");
  never->set_skip_probability(1);
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(config).ok());
  // "trigger-app" is not "trusted-.*"; "never" is always skipped.
  EXPECT_EQ(trigger_app_.FireTriggers({"go", "never"}), 0);
  EXPECT_EQ(Sessions()[0].state, SessionInfo::State::kConfigured);
  EXPECT_EQ(trigger_app_.FireTriggers({"once"}), 1);
  WaitForStartAndWriter();
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000));
  ASSERT_TRUE(consumer->FreeBuffers().ok());
  // "once" acted within the last 24 h: a new session does not get it again.
  ASSERT_TRUE(consumer->EnableTracing(config).ok());
  EXPECT_EQ(trigger_app_.FireTriggers({"once"}), 0);
  EXPECT_EQ(Sessions()[0].state, SessionInfo::State::kConfigured);
}

TEST_F(TracingServiceTriggersTest, BadTriggerConfigsAreRefusedNamingTheFix) {
  auto refused = [&](const TraceConfig& config, const std::string& hint) {
    auto consumer = service_->ConnectConsumer();
    Status st = consumer->EnableTracing(config);
    EXPECT_FALSE(st.ok()) << hint;
    EXPECT_NE(st.message().find(hint), std::string::npos) << st.message();
  };
  TraceConfig config = TriggerSessionConfig(TriggerConfig::STOP_TRACING, "x", 1000);
  config.mutable_trigger_config()->clear_trigger_mode();
  refused(config, "needs trigger_mode");
  config = TriggerSessionConfig(TriggerConfig::STOP_TRACING, "x", 0);
  refused(config, "needs trigger_timeout_ms");
  config = TriggerSessionConfig(TriggerConfig::STOP_TRACING, "x", 1000);
  config.mutable_trigger_config()->clear_triggers();
  refused(config, "has no triggers");
  config = TriggerSessionConfig(TriggerConfig::STOP_TRACING, "x", 1000);
  config.mutable_trigger_config()->mutable_triggers(0)->set_producer_name_regex("(");
  refused(config, "not a valid (POSIX extended) regex");
  config = TriggerSessionConfig(TriggerConfig::STOP_TRACING, "x", 1000);
  config.mutable_trigger_config()->mutable_triggers(0)->set_skip_probability(2);
  refused(config, "skip_probability must be within [0, 1]");
  config = TriggerSessionConfig(TriggerConfig::START_TRACING, "x", 1000);
  config.set_deferred_start(true);
  refused(config, "drop deferred_start");
  config = TriggerSessionConfig(TriggerConfig::STOP_TRACING, "", 1000);
  refused(config, "has no name");
  EXPECT_TRUE(Sessions().empty());
}

}  // namespace
}  // namespace sluice
