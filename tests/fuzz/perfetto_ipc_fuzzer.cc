// Fuzzes the decoding of Perfetto's IPC on sluiced's producer and consumer
// sockets: bytes -> IPCFrame (PerfettoIpcHost) -> ProducerPort or
// ConsumerPort method arguments -> PerfettoProducerPort's or
// PerfettoConsumerPort's translation -> IpcProducerPort / IpcConsumerPort ->
// TracingService, with no sockets (FakeChannel). The Perfetto producer has
// already done the valid handshake (BindService "ProducerPort",
// InitializeConnection with a 64 KiB SMB hint, GetAsyncCommand,
// RegisterDataSource "fuzz.ds") and a sluice consumer's session traces
// fuzz.ds, so commits, patches, writer registrations and triggers reach the
// session logic.
//
// Input: byte 0 picks the mode.
//  - Bit 1 clear: the producer port is fuzzed.
//    - Bit 0 clear (mode A): the rest is the raw byte stream of the producer
//      socket (4-byte LE length + IPCFrame, service/ipc/ipc_frame.h).
//    - Bit 0 set (mode B): the rest is a sequence of records
//        [m:1 byte][len:2 bytes LE][len bytes of args]
//      (a short last record takes what is left). Each becomes a well-formed
//      IPCFrame InvokeMethod with increasing request ids:
//        m & 0x0f  the method id (1..12: ProducerPort's methods in the order
//                  of producer_port.proto; 0, 13 and 14 do not exist); 15 is
//                  not a call but writes args[2..] into the SMB at offset
//                  args[0..1] (LE, modulo the SMB size), so that chunks
//                  moved and patched by CommitData can have contents.
//        m & 0x40  the call names service kServiceId + 1 (not bound).
//        m & 0x80  drop_reply.
//  - Bit 1 set: the consumer port is fuzzed. A PerfettoConsumerPort (its
//    own connection, already bound to "ConsumerPort", no session yet) takes
//    the input; EnableTracing with a config naming fuzz.ds starts a session
//    that really traces the producer. The sluice consumer's session has the
//    key "fuzz" (a target for CloneSession), and another sluice consumer
//    has recorded a write_into_file session "fuzz.detached" and detached it
//    (a target for Attach, as `perfetto --attach`). Unless bit 2 is set, the
//    producer is cooperative here: after each step it answers every Flush
//    and StopDataSource it was sent (CommitData with the flush id,
//    NotifyDataSourceStopped); with bit 2 it answers nothing until the end
//    of the run (flushes, clones and their calls stay pending). The
//    consumers' peer is a uid that is neither root nor the fuzzer's, so the
//    service refuses output_path (no fuzzed config creates files); the fd
//    that comes with a frame (upstream's perfetto sends the output file with
//    EnableTracing and CloneSession) is a fresh memfd, so write_into_file
//    sessions, Detach and Attach work.
//    - Bit 0 clear (mode A): the rest is the raw byte stream of the
//      consumer socket.
//    - Bit 0 set (mode B): records as above, each a call on the consumer
//      port:
//        m & 0x0f  the method id (1..15: ConsumerPort's methods in the order
//                  of consumer_port.proto; 0 does not exist).
//        m & 0x40  the call names service kServiceId + 1 (not bound).
//        m & 0x80  drop_reply.
//        m & 0x20  the record goes to the producer instead, as in producer
//                  mode B (m & 0x0f a ProducerPort method, 15 an SMB write;
//                  0x40 and 0x80 as there): data and triggers (ObserveEvents)
//                  for the consumer's session.
//  Bits 3-7 of byte 0 (and bit 2 when bit 1 is clear) are ignored.
//
// At the end of every run, in every mode, the sluice consumer reads its
// buffers, then every session is stopped as a consumer ends its trace: the
// Perfetto consumer calls DisableTracing, the sluice consumer sends
// DisableTracing, the service disables what is left (detached sessions, as
// sluiced at exit), and the producer answers the final flushes and the
// StopDataSource commands, so that the ports' flush and stop paths run; then
// both consumers read their buffers once more and the Perfetto consumer's
// connection goes away. Only timers that are due run
// (EventLoop::RunUntilIdle): a session waiting on a producer that does not
// answer (a closed or broken one) stays waiting, and the run still ends.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/ipc/producer_port.pb.h"
#include "perfetto/ipc/wire_protocol.pb.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_consumer_port.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/perfetto_consumer_port.h"
#include "service/ipc/perfetto_ipc_host.h"
#include "service/ipc/perfetto_producer_port.h"
#include "service/tracing_service.h"
#include "sluice/ipc.pb.h"
#include "tests/fuzz/ipc_fuzz_util.h"

namespace sluice {
namespace {

namespace pp = perfetto::protos;

constexpr uint32_t kSmbWrite = 15;

// ProducerPort's method ids (their index in producer_port.proto plus one).
constexpr uint32_t kInitializeConnectionId = 1;
constexpr uint32_t kRegisterDataSourceId = 2;
constexpr uint32_t kCommitDataId = 4;
constexpr uint32_t kGetAsyncCommandId = 5;
constexpr uint32_t kNotifyDataSourceStoppedId = 9;

// ConsumerPort's method ids (their index in consumer_port.proto plus one).
constexpr uint32_t kDisableTracingId = 2;
constexpr uint32_t kReadBuffersId = 3;

// Record flags (mode B).
constexpr uint8_t kToProducer = 0x20;  // Consumer mode: the record is the producer's.
constexpr uint8_t kWrongService = 0x40;
constexpr uint8_t kDropReply = 0x80;

// The SMB as the producer maps it (the fd of SetupTracing), or nothing.
class SmbMapping {
 public:
  explicit SmbMapping(int fd) {
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) return;
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return;
    start_ = static_cast<uint8_t*>(p);
    size_ = static_cast<size_t>(st.st_size);
  }
  ~SmbMapping() {
    if (start_) munmap(start_, size_);
  }
  SmbMapping(const SmbMapping&) = delete;
  SmbMapping& operator=(const SmbMapping&) = delete;

  // args: [offset:2 LE][bytes].
  void Write(const uint8_t* args, size_t len) {
    if (!start_ || len < 2) return;
    const size_t offset = (args[0] | static_cast<size_t>(args[1]) << 8) % size_;
    const size_t n = std::min(len - 2, size_ - offset);
    memcpy(start_ + offset, args + 2, n);
  }

 private:
  uint8_t* start_ = nullptr;
  size_t size_ = 0;
};

// The Perfetto producer's channel: notes the Flush and StopDataSource
// commands the service sends on the command stream (GetAsyncCommand's
// replies), so that the fuzzer can answer them as a producer would.
class ProducerChannel : public FakeChannel {
 public:
  void Send(const google::protobuf::MessageLite& msg, int fd) override {
    FakeChannel::Send(msg, fd);
    // PerfettoIpcHost sends nothing but IPCFrames.
    const auto& frame = static_cast<const pp::IPCFrame&>(msg);
    if (command_stream == 0 || frame.request_id() != command_stream ||
        !frame.has_msg_invoke_method_reply())
      return;
    pp::GetAsyncCommandResponse command;
    if (!command.ParseFromString(frame.msg_invoke_method_reply().reply_proto())) return;
    if (command.has_flush()) flushes.push_back(command.flush().request_id());
    if (command.has_stop_data_source()) stops.push_back(command.stop_data_source().instance_id());
  }

  uint64_t command_stream = 0;  // GetAsyncCommand's request id.
  std::vector<uint64_t> flushes;
  std::vector<uint64_t> stops;
};

// A consumer's channel. Its peer is a uid that is neither root nor the
// fuzzer's, so that the service refuses TraceConfig.output_path (a fuzzed
// config would create files). The fd that came with a frame (upstream's
// perfetto sends the output file with EnableTracing and CloneSession) is a
// fresh memfd.
class ConsumerChannel : public FakeChannel {
 public:
  ConsumerChannel() : consumer_peer_(FakeChannel::peer()) { consumer_peer_.uid = getuid() + 1; }
  const PeerCredentials& peer() const override { return consumer_peer_; }
  ScopedFd TakeReceivedFd() override {
    return ScopedFd(memfd_create("perfetto_ipc_fuzzer", MFD_CLOEXEC));
  }

 private:
  PeerCredentials consumer_peer_;
};

class Client {
 public:
  std::string Bind(const std::string& service) {
    pp::IPCFrame f;
    f.set_request_id(++request_id_);
    f.mutable_msg_bind_service()->set_service_name(service);
    return f.SerializeAsString();
  }
  std::string Invoke(uint32_t service_id, uint32_t method_id, std::string_view args,
                     bool drop_reply) {
    pp::IPCFrame f;
    f.set_request_id(++request_id_);
    auto* invoke = f.mutable_msg_invoke_method();
    invoke->set_service_id(service_id);
    invoke->set_method_id(method_id);
    invoke->set_args_proto(args.data(), args.size());
    if (drop_reply) invoke->set_drop_reply(true);
    return f.SerializeAsString();
  }
  std::string Invoke(uint32_t method_id, const google::protobuf::MessageLite& args) {
    return Invoke(PerfettoIpcHost::kServiceId, method_id, args.SerializeAsString(), false);
  }
  // A record of mode B: [m] and its args.
  std::string Invoke(uint8_t m, const uint8_t* args, size_t len) {
    const uint32_t service_id = PerfettoIpcHost::kServiceId + ((m & kWrongService) ? 1 : 0);
    return Invoke(service_id, m & 0x0f, std::string_view(reinterpret_cast<const char*>(args), len),
                  (m & kDropReply) != 0);
  }
  uint64_t last_request_id() const { return request_id_; }

 private:
  uint64_t request_id_ = 0;
};

void Feed(IpcFrameHandler* port, const google::protobuf::MessageLite& msg) {
  std::string bytes = msg.SerializeAsString();
  port->OnFrame(bytes);
}

void RunOne(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const bool records = (data[0] & 1) != 0;
  const bool consumer_mode = (data[0] & 2) != 0;
  const bool producer_answers = consumer_mode && (data[0] & 4) == 0;
  EventLoop loop;
  TracingServiceOptions options;
  options.max_total_buffer_bytes = 32u << 20;
  options.max_shm_size_bytes = 1u << 20;
  options.log = [](const std::string&) {};  // The lines are made, not kept.
  TracingService service(&loop, options);
  ProducerChannel producer_channel;
  ConsumerChannel consumer_channel, perfetto_consumer_channel;
  {
    PerfettoProducerPort producer(&service, &producer_channel);
    IpcConsumerPort consumer(&service, &consumer_channel);
    std::optional<PerfettoConsumerPort> perfetto_consumer;
    Client client, consumer_client;
    uint64_t sluice_request_id = 0;

    // The valid handshake.
    producer.OnFrame(client.Bind(PerfettoProducerPort::kServiceName));
    pp::InitializeConnectionRequest init;
    init.set_producer_name("fuzz");
    init.set_shared_memory_size_hint_bytes(64 * 1024);
    producer.OnFrame(client.Invoke(kInitializeConnectionId, init));
    producer.OnFrame(client.Invoke(kGetAsyncCommandId, pp::GetAsyncCommandRequest()));
    producer_channel.command_stream = client.last_request_id();
    pp::RegisterDataSourceRequest reg;
    reg.mutable_data_source_descriptor()->set_name("fuzz.ds");
    producer.OnFrame(client.Invoke(kRegisterDataSourceId, reg));
    protos::ConsumerToService enable;
    enable.set_request_id(++sluice_request_id);
    if (consumer_mode) enable.mutable_enable_tracing()->set_key("fuzz");
    auto* config = enable.mutable_enable_tracing()->mutable_trace_config();
    config->add_buffers()->set_size_kb(256);
    config->add_data_sources()->mutable_config()->set_name("fuzz.ds");
    Feed(&consumer, enable);
    if (consumer_mode) {
      // A session another sluice consumer recorded into a file and detached
      // (`sluice record --detach`): the Perfetto consumer may Attach to it,
      // as upstream's `perfetto --attach` does.
      ConsumerChannel detaching_channel;
      IpcConsumerPort detaching(&service, &detaching_channel);
      protos::ConsumerToService start;
      start.set_request_id(1);
      start.mutable_enable_tracing()->set_key("fuzz.detached");
      auto* file_config = start.mutable_enable_tracing()->mutable_trace_config();
      file_config->set_write_into_file(true);  // Into a memfd (TakeReceivedFd).
      file_config->add_buffers()->set_size_kb(64);
      file_config->add_data_sources()->mutable_config()->set_name("fuzz.ds");
      Feed(&detaching, start);
      protos::ConsumerToService detach;
      detach.set_request_id(2);
      detach.mutable_detach();
      Feed(&detaching, detach);
    }
    loop.RunUntilIdle();
    // The SMB came with SetupTracing, the only frame with an fd.
    SmbMapping smb(producer_channel.last_fd.get());

    // The producer answers the flushes and stops it was sent (as a
    // cooperative one does), until the service asks for nothing more.
    auto answer_producer = [&] {
      for (int round = 0; round < 16 && !producer_channel.closed &&
                          (!producer_channel.flushes.empty() || !producer_channel.stops.empty());
           round++) {
        const std::vector<uint64_t> flushes = std::exchange(producer_channel.flushes, {});
        const std::vector<uint64_t> stops = std::exchange(producer_channel.stops, {});
        for (uint64_t id : flushes) {
          protos::CommitDataRequest commit;  // Upstream's field numbers.
          commit.set_flush_request_id(id);
          producer.OnFrame(client.Invoke(kCommitDataId, commit));
        }
        for (uint64_t id : stops) {
          pp::NotifyDataSourceStoppedRequest stopped;
          stopped.set_data_source_id(id);
          producer.OnFrame(client.Invoke(kNotifyDataSourceStoppedId, stopped));
        }
        loop.RunUntilIdle();
      }
    };
    auto perfetto_consumer_open = [&] {
      return perfetto_consumer && !perfetto_consumer_channel.closed;
    };

    if (consumer_mode) {
      perfetto_consumer.emplace(&service, &perfetto_consumer_channel);
      perfetto_consumer->OnFrame(consumer_client.Bind(PerfettoConsumerPort::kServiceName));
    }
    IpcFrameHandler* target = consumer_mode ? static_cast<IpcFrameHandler*>(&*perfetto_consumer)
                                            : static_cast<IpcFrameHandler*>(&producer);
    FakeChannel* target_channel =
        consumer_mode ? static_cast<FakeChannel*>(&perfetto_consumer_channel)
                      : static_cast<FakeChannel*>(&producer_channel);
    if (!records) {
      FrameReader reader;
      reader.Append(data + 1, size - 1);
      std::string_view frame;
      while (!target_channel->closed && reader.NextFrame(&frame) == FrameReader::Result::kFrame) {
        target->OnFrame(frame);
        loop.RunUntilIdle();
        if (producer_answers) answer_producer();
      }
    } else {
      size_t off = 1;
      while (!target_channel->closed && off + 3 <= size) {
        const uint8_t m = data[off];
        const size_t len = std::min<size_t>(data[off + 1] | data[off + 2] << 8, size - off - 3);
        const uint8_t* args = data + off + 3;
        off += 3 + len;
        if (!consumer_mode || (m & kToProducer)) {
          if ((m & 0x0f) == kSmbWrite) {
            smb.Write(args, len);
            continue;
          }
          if (producer_channel.closed) continue;
          producer.OnFrame(client.Invoke(m, args, len));
        } else {
          perfetto_consumer->OnFrame(consumer_client.Invoke(m, args, len));
        }
        loop.RunUntilIdle();
        if (producer_answers) answer_producer();
      }
    }
    if (!consumer_channel.closed) {
      protos::ConsumerToService read;
      read.set_request_id(++sluice_request_id);
      read.mutable_read_buffers();
      Feed(&consumer, read);
    }
    loop.RunUntilIdle();

    // Every session stops, as when a consumer ends its trace: the final
    // flush, StopDataSource, the end of the session announced.
    if (perfetto_consumer_open())
      perfetto_consumer->OnFrame(consumer_client.Invoke(PerfettoIpcHost::kServiceId,
                                                        kDisableTracingId, "", false));
    if (!consumer_channel.closed) {
      protos::ConsumerToService disable;
      disable.set_request_id(++sluice_request_id);
      disable.mutable_disable_tracing();
      Feed(&consumer, disable);
    }
    loop.RunUntilIdle();
    service.DisableAllSessions();  // Detached ones, as sluiced at exit.
    loop.RunUntilIdle();
    answer_producer();
    // The final reads.
    if (perfetto_consumer_open())
      perfetto_consumer->OnFrame(consumer_client.Invoke(PerfettoIpcHost::kServiceId,
                                                        kReadBuffersId, "", false));
    if (!consumer_channel.closed) {
      protos::ConsumerToService read;
      read.set_request_id(++sluice_request_id);
      read.mutable_read_buffers();
      Feed(&consumer, read);
    }
    loop.RunUntilIdle();
    // The Perfetto consumer goes away (calls unanswered, a clone or an
    // attached session left behind).
    perfetto_consumer.reset();
    loop.RunUntilIdle();
    answer_producer();
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
