// Fuzzes the service's IPC decoding: bytes -> FrameReader -> envelope parse
// -> IpcProducerPort / IpcConsumerPort dispatch -> TracingService, with no
// sockets (FakeChannel). The producer has already connected (handshake and a
// data source registered) and a consumer session traces that data source, so
// commits, patches and requests reach the session logic.
//
// Input: byte 0 picks the port (even: producer, odd: consumer); the rest is
// the byte stream that port receives.
#include <cstddef>
#include <cstdint>

#include "google/protobuf/stubs/logging.h"
#include "perfetto/config/trace_config.pb.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_consumer_port.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_producer_port.h"
#include "service/tracing_service.h"
#include "sluice/ipc.pb.h"
#include "tests/fuzz/ipc_fuzz_util.h"

namespace sluice {
namespace {

void Feed(IpcFrameHandler* port, const google::protobuf::MessageLite& msg) {
  std::string bytes = msg.SerializeAsString();
  port->OnFrame(bytes);
}

void RunOne(const uint8_t* data, size_t size) {
  if (size < 1) return;
  EventLoop loop;
  TracingServiceOptions options;
  options.max_total_buffer_bytes = 32u << 20;
  options.max_shm_size_bytes = 1u << 20;
  TracingService service(&loop, options);
  FakeChannel producer_channel, consumer_channel;
  {
    IpcProducerPort producer(&service, &producer_channel);
    IpcConsumerPort consumer(&service, &consumer_channel);

    protos::ProducerToService init;
    init.mutable_initialize_connection()->set_producer_name("fuzz");
    init.mutable_initialize_connection()->set_shm_size_hint_bytes(64 * 1024);
    Feed(&producer, init);
    protos::ProducerToService reg;
    reg.mutable_register_data_source()->set_name("fuzz.ds");
    Feed(&producer, reg);
    protos::ConsumerToService enable;
    enable.set_request_id(1);
    auto* config = enable.mutable_enable_tracing()->mutable_trace_config();
    config->add_buffers()->set_size_kb(256);
    config->add_data_sources()->mutable_config()->set_name("fuzz.ds");
    Feed(&consumer, enable);
    loop.RunUntilIdle();

    IpcFrameHandler* target = (data[0] & 1) ? static_cast<IpcFrameHandler*>(&consumer)
                                            : static_cast<IpcFrameHandler*>(&producer);
    FakeChannel* channel = (data[0] & 1) ? &consumer_channel : &producer_channel;
    FrameReader reader;
    reader.Append(data + 1, size - 1);
    std::string_view frame;
    while (!channel->closed && reader.NextFrame(&frame) == FrameReader::Result::kFrame) {
      target->OnFrame(frame);
      loop.RunUntilIdle();
    }
    if (!consumer_channel.closed) {
      protos::ConsumerToService read;
      read.set_request_id(2);
      read.mutable_read_buffers();
      Feed(&consumer, read);
    }
    loop.RunUntilIdle();
  }
  loop.RunUntilIdle();
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = (google::protobuf::SetLogHandler(nullptr), true);  // UTF-8 warnings
  (void)quiet;
  sluice::RunOne(data, size);
  return 0;
}
