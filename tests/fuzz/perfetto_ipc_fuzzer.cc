// Fuzzes the decoding of Perfetto's IPC on a producer socket: bytes ->
// IPCFrame (PerfettoIpcHost) -> ProducerPort method arguments ->
// PerfettoProducerPort's translation -> IpcProducerPort -> TracingService,
// with no sockets (FakeChannel). The producer has already done the valid
// handshake (BindService "ProducerPort", InitializeConnection with a 64 KiB
// SMB hint, GetAsyncCommand, RegisterDataSource "fuzz.ds") and a consumer
// session traces fuzz.ds, so commits, patches, writer registrations and
// triggers reach the session logic.
//
// Input: byte 0 picks the mode.
//  - Even (mode A): the rest is the raw byte stream of the socket (4-byte LE
//    length + IPCFrame, service/ipc/ipc_frame.h).
//  - Odd (mode B): the rest is a sequence of records
//      [m:1 byte][len:2 bytes LE][len bytes of args]
//    (a short last record takes what is left). Each becomes a well-formed
//    IPCFrame InvokeMethod with increasing request ids:
//      m & 0x0f  the method id (1..12: ProducerPort's methods in the order
//                of producer_port.proto; 0, 13 and 14 do not exist); 15 is
//                not a call but writes args[2..] into the SMB at offset
//                args[0..1] (LE, modulo the SMB size), so that chunks moved
//                and patched by CommitData can have contents.
//      m & 0x40  the call names service kServiceId + 1 (not bound).
//      m & 0x80  drop_reply.
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/ipc/producer_port.pb.h"
#include "perfetto/ipc/wire_protocol.pb.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_consumer_port.h"
#include "service/ipc/ipc_frame.h"
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
constexpr uint32_t kGetAsyncCommandId = 5;

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

 private:
  uint64_t request_id_ = 0;
};

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
    PerfettoProducerPort producer(&service, &producer_channel);
    IpcConsumerPort consumer(&service, &consumer_channel);
    Client client;

    // The valid handshake.
    producer.OnFrame(client.Bind(PerfettoProducerPort::kServiceName));
    pp::InitializeConnectionRequest init;
    init.set_producer_name("fuzz");
    init.set_shared_memory_size_hint_bytes(64 * 1024);
    producer.OnFrame(client.Invoke(kInitializeConnectionId, init));
    producer.OnFrame(client.Invoke(kGetAsyncCommandId, pp::GetAsyncCommandRequest()));
    pp::RegisterDataSourceRequest reg;
    reg.mutable_data_source_descriptor()->set_name("fuzz.ds");
    producer.OnFrame(client.Invoke(kRegisterDataSourceId, reg));
    protos::ConsumerToService enable;
    enable.set_request_id(1);
    auto* config = enable.mutable_enable_tracing()->mutable_trace_config();
    config->add_buffers()->set_size_kb(256);
    config->add_data_sources()->mutable_config()->set_name("fuzz.ds");
    Feed(&consumer, enable);
    loop.RunUntilIdle();
    // The SMB came with SetupTracing, the only frame with an fd.
    SmbMapping smb(producer_channel.last_fd.get());

    if ((data[0] & 1) == 0) {
      FrameReader reader;
      reader.Append(data + 1, size - 1);
      std::string_view frame;
      while (!producer_channel.closed && reader.NextFrame(&frame) == FrameReader::Result::kFrame) {
        producer.OnFrame(frame);
        loop.RunUntilIdle();
      }
    } else {
      size_t off = 1;
      while (!producer_channel.closed && off + 3 <= size) {
        const uint8_t m = data[off];
        const size_t len = std::min<size_t>(data[off + 1] | data[off + 2] << 8, size - off - 3);
        const uint8_t* args = data + off + 3;
        off += 3 + len;
        const uint32_t method_id = m & 0x0f;
        if (method_id == kSmbWrite) {
          smb.Write(args, len);
          continue;
        }
        const uint32_t service_id = PerfettoIpcHost::kServiceId + ((m & 0x40) ? 1 : 0);
        producer.OnFrame(client.Invoke(service_id, method_id,
                                       std::string_view(reinterpret_cast<const char*>(args), len),
                                       (m & 0x80) != 0));
        loop.RunUntilIdle();
      }
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
