// Fuzzes the host's end of a relay link: bytes a guest's relay sends ->
// RelayLink framing -> RelayFrame parse -> RelayServer's machine link
// (hello, clock rounds, producers, commits of chunk bytes checked as an
// SMB's, patches, writers, losses) -> TracingService, with a session
// recording the data source a relayed producer registers.
//
// Input: byte 0 bit 0 set: a valid hello and one clock round come first, so
// the rest reaches the producer paths; the rest of the input is the stream.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "perfetto/config/trace_config.pb.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_consumer_port.h"
#include "service/ipc/ipc_frame.h"
#include "service/relay/relay_clock_sync.h"
#include "service/relay/relay_server.h"
#include "service/tracing_service.h"
#include "sluice/ipc.pb.h"
#include "sluice/relay.pb.h"
#include "tests/fuzz/ipc_fuzz_util.h"

namespace sluice {
namespace {

std::string Framed(const protos::RelayFrame& f) {
  std::string out;
  AppendFrame(f.SerializeAsString(), &out);
  return out;
}

std::string Handshake() {
  std::string out;
  protos::RelayFrame hello;
  hello.mutable_hello()->set_protocol_version(1);
  hello.mutable_hello()->set_machine_name("fuzz");
  out += Framed(hello);
  protos::RelayFrame ping;
  ping.mutable_clock_sync()->set_round(1);
  ping.mutable_clock_sync()->set_step(protos::RelayClockSync::PING);
  out += Framed(ping);
  protos::RelayFrame readings;
  auto* r = readings.mutable_clock_sync();
  r->set_round(1);
  r->set_step(protos::RelayClockSync::READINGS);
  *r->mutable_client_at_ping() = ReadRelayClocks();
  *r->mutable_client_at_pong() = ReadRelayClocks();
  r->set_last_of_burst(true);
  out += Framed(readings);
  return out;
}

void RunOne(const uint8_t* data, size_t size) {
  if (size < 1) return;
  EventLoop loop;
  TracingServiceOptions options;
  options.max_total_buffer_bytes = 32u << 20;
  TracingService service(&loop, options);
  FakeChannel consumer_channel;
  IpcConsumerPort consumer(&service, &consumer_channel);
  protos::ConsumerToService enable;
  enable.set_request_id(1);
  auto* config = enable.mutable_enable_tracing()->mutable_trace_config();
  config->add_buffers()->set_size_kb(256);
  config->add_data_sources()->mutable_config()->set_name("fuzz.ds");
  consumer.OnFrame(enable.SerializeAsString());
  loop.RunUntilIdle();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) return;
  ScopedFd ours(fds[1]);
  std::unique_ptr<RelayServer> server = RelayServer::CreateWithoutListener(&service);
  server->AddLink(ScopedFd(fds[0]));
  std::string stream = (data[0] & 1) ? Handshake() : std::string();
  stream.append(reinterpret_cast<const char*>(data + 1), size - 1);
  // The stream in pieces the socket takes, the link reading between them,
  // then the end of the stream: the link ends, its producers go.
  size_t sent = 0;
  for (int rounds = 0; rounds < 10000 && sent < stream.size(); rounds++) {
    ssize_t n = write(ours.get(), stream.data() + sent, stream.size() - sent);
    if (n > 0) sent += static_cast<size_t>(n);
    loop.RunUntilIdle();
    char drain[4096];
    while (read(ours.get(), drain, sizeof(drain)) > 0) {
    }
    if (server->num_links() == 0) break;
  }
  shutdown(ours.get(), SHUT_WR);
  for (int rounds = 0; rounds < 100 && server->num_links() > 0; rounds++) loop.RunUntilIdle();
  server.reset();
  protos::ConsumerToService read;
  read.set_request_id(2);
  read.mutable_read_buffers();
  if (!consumer_channel.closed) consumer.OnFrame(read.SerializeAsString());
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
