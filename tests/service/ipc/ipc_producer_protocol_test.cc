#include "service/ipc/ipc_producer_protocol.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(IpcProducerProtocolTest, CommitDataRoundTrip) {
  CommitDataRequest in;
  in.chunks_to_move = {ChunkToMove{1, 2, 3}, ChunkToMove{4, 5, 6}};
  ChunkPatch p;
  p.target_buffer = 3;
  p.writer_id = 9;
  p.chunk_id = 100;
  p.offset = 16;
  memcpy(p.data, "\x81\x80\x80\x00", 4);
  p.has_more_patches = true;
  in.chunks_to_patch.push_back(p);
  p.offset = 40;
  p.has_more_patches = false;
  in.chunks_to_patch.push_back(p);
  p.chunk_id = 101;
  p.offset = 8;
  in.chunks_to_patch.push_back(p);
  in.flush_request_id = 77;

  protos::CommitDataRequest msg;
  CommitDataToProto(in, &msg);
  EXPECT_EQ(msg.chunks_to_patch_size(), 2) << "patches of one chunk share an entry";
  protos::CommitDataRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(msg.SerializeAsString()));
  CommitDataRequest out;
  uint32_t malformed = 99;
  CommitDataFromProto(parsed, &out, &malformed);
  EXPECT_EQ(malformed, 0u);
  ASSERT_EQ(out.chunks_to_move.size(), 2u);
  EXPECT_EQ(out.chunks_to_move[1].page, 4u);
  EXPECT_EQ(out.chunks_to_move[1].chunk, 5u);
  EXPECT_EQ(out.chunks_to_move[1].target_buffer, 6u);
  ASSERT_EQ(out.chunks_to_patch.size(), 3u);
  EXPECT_TRUE(out.chunks_to_patch[0].has_more_patches);
  EXPECT_FALSE(out.chunks_to_patch[1].has_more_patches);
  EXPECT_EQ(out.chunks_to_patch[1].offset, 40u);
  EXPECT_EQ(out.chunks_to_patch[2].chunk_id, 101u);
  EXPECT_EQ(memcmp(out.chunks_to_patch[2].data, "\x81\x80\x80\x00", 4), 0);
  EXPECT_EQ(out.flush_request_id, 77u);
}

TEST(IpcProducerProtocolTest, MalformedPatchesAreLeftOut) {
  protos::CommitDataRequest msg;
  auto* group = msg.add_chunks_to_patch();
  group->set_writer_id(70000);  // Above 16 bits.
  group->add_patches()->set_data("abcd");
  group = msg.add_chunks_to_patch();
  group->set_writer_id(1);
  group->add_patches()->set_data("abc");  // Not 4 bytes.
  group->add_patches()->set_data("abcd");
  CommitDataRequest out;
  uint32_t malformed = 0;
  CommitDataFromProto(msg, &out, &malformed);
  EXPECT_EQ(malformed, 2u);
  EXPECT_EQ(out.chunks_to_patch.size(), 1u);
}

TEST(IpcProducerProtocolTest, WriterEventsTravelAsFields8And9) {
  protos::ProducerToService msg;
  SetRegisterTraceWriter(&msg, 12, 34);
  protos::ProducerToService parsed;
  ASSERT_TRUE(parsed.ParseFromString(msg.SerializeAsString()));
  WriterEvent ev = GetWriterEvent(parsed);
  EXPECT_EQ(ev.kind, WriterEvent::kRegister);
  EXPECT_EQ(ev.writer_id, 12u);
  EXPECT_EQ(ev.target_buffer, 34u);
  EXPECT_EQ(parsed.msg_case(), protos::ProducerToService::MSG_NOT_SET);

  protos::ProducerToService un;
  SetUnregisterTraceWriter(&un, 12);
  ASSERT_TRUE(parsed.ParseFromString(un.SerializeAsString()));
  ev = GetWriterEvent(parsed);
  EXPECT_EQ(ev.kind, WriterEvent::kUnregister);
  EXPECT_EQ(ev.writer_id, 12u);

  // Field 8 as a varint: malformed.
  std::string bad("\x40\x01", 2);
  ASSERT_TRUE(parsed.ParseFromString(bad));
  EXPECT_EQ(GetWriterEvent(parsed).kind, WriterEvent::kMalformed);
  // Nothing: none.
  EXPECT_EQ(GetWriterEvent(protos::ProducerToService()).kind, WriterEvent::kNone);
}

// Fields 8 and 9 travel outside ipc.proto's oneof: a message added to it
// must not take their numbers (activate_triggers once did, and writer
// registrations then parsed as triggers).
TEST(IpcProducerProtocolTest, WriterEventFieldNumbersAreFreeInTheEnvelope) {
  const auto* envelope = protos::ProducerToService::descriptor();
  EXPECT_EQ(envelope->FindFieldByNumber(kRegisterTraceWriterField), nullptr);
  EXPECT_EQ(envelope->FindFieldByNumber(kUnregisterTraceWriterField), nullptr);
}

}  // namespace
}  // namespace sluice
