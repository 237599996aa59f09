#include "service/ipc/producer_ipc_client.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include <chrono>

#include "perfetto/config/data_source_config.pb.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "sluice/ipc.pb.h"

namespace sluice {
namespace {

// Reads one frame (blocking, with a deadline). Received fds go to *fds.
Status ReadOneFrame(int sock, FrameReader* reader, std::vector<ScopedFd>* fds, std::string* frame,
                    uint32_t timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::string_view f;
    FrameReader::Result r = reader->NextFrame(&f);
    if (r == FrameReader::Result::kFrame) {
      frame->assign(f.data(), f.size());
      return Status::Ok();
    }
    if (r == FrameReader::Result::kError) return Status::Error("sluiced sent a malformed frame");
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return Status::Error("sluiced did not answer in time");
    pollfd pfd{sock, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left)) <= 0) continue;
    size_t available = 0;
    uint8_t* dst = reader->WritableSpace(64 * 1024, &available);
    ssize_t n = RecvWithFds(sock, dst, available, fds);
    if (n <= 0) return Status::Error("sluiced closed the connection");
    reader->CommitWritten(static_cast<size_t>(n));
  }
}

}  // namespace

ProducerIpcClient::ProducerIpcClient(ScopedFd socket, Producer* endpoint)
    : socket_(std::move(socket)), endpoint_(endpoint) {}

StatusOr<std::unique_ptr<ProducerIpcClient>> ProducerIpcClient::Connect(
    const std::string& socket_path, Producer* endpoint, const ProducerOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(ScopedFd sock, ConnectUnixSocket(socket_path));
  std::unique_ptr<ProducerIpcClient> client(new ProducerIpcClient(std::move(sock), endpoint));

  protos::ProducerToService init;
  auto* m = init.mutable_initialize_connection();
  m->set_producer_name(options.name);
  m->set_shm_size_hint_bytes(options.shm_size_hint_bytes);
  m->set_shm_page_size_hint_bytes(options.shm_page_size_hint_bytes);
  m->set_protocol_version(kIpcVersion);
  client->Send(init);

  FrameReader reader;
  std::vector<ScopedFd> fds;
  std::string frame;
  SLUICE_RETURN_IF_ERROR(
      ReadOneFrame(client->socket_.get(), &reader, &fds, &frame, kConnectTimeoutMs));
  protos::ServiceToProducer reply;
  if (!reply.ParseFromString(frame) || !reply.has_initialize_connection_response())
    return Status::Error("sluiced answered InitializeConnection with something else");
  const auto& r = reply.initialize_connection_response();
  if (!r.error().empty()) return Status::Error("sluiced refused the producer: " + r.error());
  if (fds.empty()) return Status::Error("sluiced sent no shared memory fd");
  SLUICE_ASSIGN_OR_RETURN(client->shm_, SharedMemory::Attach(fds[0].release(), r.shm_size_bytes()));
  client->page_size_ = r.shm_page_size_bytes();
  if (reader.buffered_bytes() != 0)
    return Status::Error("sluiced sent data before the producer was ready");
  ProducerIpcClient* c = client.get();
  client->receiver_ = std::thread([c] {
    pthread_setname_np(pthread_self(), "ipc-receive");
    c->ReceiveLoop();
  });
  return client;
}

ProducerIpcClient::~ProducerIpcClient() {
  shutting_down_.store(true, std::memory_order_release);
  shutdown(socket_.get(), SHUT_RDWR);  // Wakes the receive thread.
  if (receiver_.joinable()) {
    if (receiver_.get_id() == std::this_thread::get_id())
      receiver_.detach();  // Misuse (see the header); do not deadlock.
    else
      receiver_.join();
  }
}

void ProducerIpcClient::Send(const google::protobuf::MessageLite& envelope) {
  if (!connected()) return;
  std::string bytes;
  AppendFrame(envelope.SerializeAsString(), &bytes);
  std::lock_guard<std::mutex> lock(send_mu_);
  if (!SendAll(socket_.get(), bytes.data(), bytes.size()))
    connected_.store(false, std::memory_order_release);
}

bool ProducerIpcClient::SendRawForTesting(const std::string& bytes) {
  std::lock_guard<std::mutex> lock(send_mu_);
  return SendAll(socket_.get(), bytes.data(), bytes.size());
}

void ProducerIpcClient::ReceiveLoop() {
  FrameReader reader;
  std::string reason = "sluiced closed the connection";
  for (;;) {
    size_t available = 0;
    uint8_t* dst = reader.WritableSpace(64 * 1024, &available);
    std::vector<ScopedFd> fds;  // The service sends none after the SMB: closed.
    ssize_t n = RecvWithFds(socket_.get(), dst, available, &fds);
    if (n <= 0) break;
    reader.CommitWritten(static_cast<size_t>(n));
    std::string_view frame;
    FrameReader::Result r;
    bool bad = false;
    while ((r = reader.NextFrame(&frame)) == FrameReader::Result::kFrame) {
      protos::ServiceToProducer msg;
      if (!msg.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
        bad = true;
        break;
      }
      switch (msg.msg_case()) {
        case protos::ServiceToProducer::kSetupDataSource:
          endpoint_->SetupDataSource(msg.setup_data_source().data_source_id(),
                                     msg.setup_data_source().config());
          break;
        case protos::ServiceToProducer::kStartDataSource:
          endpoint_->StartDataSource(msg.start_data_source().data_source_id(),
                                     msg.start_data_source().config());
          break;
        case protos::ServiceToProducer::kStopDataSource:
          endpoint_->StopDataSource(msg.stop_data_source().data_source_id());
          break;
        case protos::ServiceToProducer::kFlush: {
          std::vector<DataSourceInstanceId> ids(msg.flush().data_source_ids().begin(),
                                                msg.flush().data_source_ids().end());
          endpoint_->Flush(msg.flush().flush_request_id(), ids);
          break;
        }
        case protos::ServiceToProducer::kClearIncrementalState: {
          const auto& ids_msg = msg.clear_incremental_state().data_source_ids();
          endpoint_->ClearIncrementalState(
              std::vector<DataSourceInstanceId>(ids_msg.begin(), ids_msg.end()));
          break;
        }
        case protos::ServiceToProducer::kActivateTriggersResponse:
          endpoint_->OnTriggersActivated(msg.activate_triggers_response().sessions_triggered());
          break;
        default:
          break;  // Newer service: ignore what we do not know.
      }
    }
    if (bad || r == FrameReader::Result::kError) {
      reason = "sluiced sent a malformed frame";
      break;
    }
  }
  connected_.store(false, std::memory_order_release);
  if (!shutting_down_.load(std::memory_order_acquire)) endpoint_->OnDisconnect(reason);
}

void ProducerIpcClient::RegisterDataSource(const DataSourceDescriptor& d) {
  protos::ProducerToService msg;
  auto* m = msg.mutable_register_data_source();
  m->set_name(d.name);
  m->set_will_notify_on_start(d.will_notify_on_start);
  m->set_will_notify_on_stop(d.will_notify_on_stop);
  m->set_handles_incremental_state_clear(d.handles_incremental_state_clear);
  Send(msg);
}

void ProducerIpcClient::UnregisterDataSource(const std::string& name) {
  protos::ProducerToService msg;
  msg.mutable_unregister_data_source()->set_name(name);
  Send(msg);
}

void ProducerIpcClient::NotifyDataSourceStarted(DataSourceInstanceId id) {
  protos::ProducerToService msg;
  msg.mutable_data_source_started()->set_data_source_id(id);
  Send(msg);
}

void ProducerIpcClient::NotifyDataSourceStopped(DataSourceInstanceId id) {
  protos::ProducerToService msg;
  msg.mutable_data_source_stopped()->set_data_source_id(id);
  Send(msg);
}

void ProducerIpcClient::NotifyFlushComplete(FlushRequestId id) {
  protos::ProducerToService msg;
  msg.mutable_notify_flush_complete()->set_flush_request_id(id);
  Send(msg);
}

void ProducerIpcClient::ActivateTriggers(const std::vector<std::string>& names) {
  protos::ProducerToService msg;
  for (const std::string& name : names) msg.mutable_activate_triggers()->add_trigger_names(name);
  msg.mutable_activate_triggers();  // Set even when `names` is empty.
  Send(msg);
}

void ProducerIpcClient::CommitData(const CommitDataRequest& request) {
  protos::ProducerToService msg;
  CommitDataToProto(request, msg.mutable_commit_data());
  Send(msg);
}

void ProducerIpcClient::RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) {
  protos::ProducerToService msg;
  SetRegisterTraceWriter(&msg, writer_id, target_buffer);
  Send(msg);
}

void ProducerIpcClient::UnregisterTraceWriter(uint16_t writer_id) {
  protos::ProducerToService msg;
  SetUnregisterTraceWriter(&msg, writer_id);
  Send(msg);
}

}  // namespace sluice
