#include "service/ipc/consumer_ipc_client.h"

#include <errno.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "service/ipc/session_description.h"
#include "shm/base/errno_message.h"
#include "sluice/ipc.pb.h"

namespace sluice {

StatusOr<std::unique_ptr<ConsumerIpcClient>> ConsumerIpcClient::Connect(
    const std::string& socket_path) {
  SLUICE_ASSIGN_OR_RETURN(ScopedFd sock, ConnectUnixSocket(socket_path));
  return std::unique_ptr<ConsumerIpcClient>(new ConsumerIpcClient(std::move(sock)));
}

ConsumerIpcClient::~ConsumerIpcClient() = default;

Status ConsumerIpcClient::LoseConnection(int err) {
  broken_ = true;
  connection_lost_ = true;
  // EOF, EPIPE and ECONNRESET all mean the other end is gone.
  std::string detail = err && err != EPIPE && err != ECONNRESET ? ErrnoMessage(err) + "; " : "";
  return Status::Error("lost the connection to sluiced (" + detail + "it exited or was killed)");
}

Status ConsumerIpcClient::SendRequest(protos::ConsumerToService* request, int fd) {
  if (broken_) return Status::Error("the connection to sluiced is closed");
  request->set_request_id(++last_request_id_);
  std::string bytes;
  AppendFrame(request->SerializeAsString(), &bytes);
  if (!SendAll(socket_.get(), bytes.data(), bytes.size(), fd)) return LoseConnection(errno);
  return Status::Ok();
}

StatusOr<bool> ConsumerIpcClient::ReadOneFrame(uint32_t timeout_ms, protos::ServiceToConsumer* msg,
                                               int interrupt_fd) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::string_view frame;
    FrameReader::Result r = reader_.NextFrame(&frame);
    if (r == FrameReader::Result::kFrame) {
      if (!msg->ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
        broken_ = true;
        return Status::Error("sluiced sent a message this consumer cannot parse");
      }
      if (msg->has_clone_trigger_hit()) clone_triggers_.push_back(msg->clone_trigger_hit().trigger_name());
      if (msg->has_trace_file_finished()) finished_files_.push_back(msg->trace_file_finished().name());
      if (msg->has_tracing_disabled()) {
        disabled_ = true;
        disabled_error_ = msg->tracing_disabled().error();
      }
      return true;
    }
    if (r == FrameReader::Result::kError) {
      broken_ = true;
      return Status::Error("sluiced sent a malformed frame");
    }
    if (broken_) return Status::Error("the connection to sluiced is closed");
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd pfds[2] = {{socket_.get(), POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
    const int wait_ms = timeout_ms == kWaitForever ? -1 : static_cast<int>(std::min<int64_t>(left, INT32_MAX));
    int pr = poll(pfds, interrupt_fd >= 0 ? 2 : 1, wait_ms);
    if (pr <= 0) continue;
    if (interrupt_fd >= 0 && (pfds[1].revents & (POLLIN | POLLHUP | POLLERR))) return false;
    size_t available = 0;
    uint8_t* dst = reader_.WritableSpace(256 * 1024, &available);
    std::vector<ScopedFd> fds;  // None expected; closed.
    ssize_t n = RecvWithFds(socket_.get(), dst, available, &fds);
    if (n <= 0) return LoseConnection(n < 0 ? errno : 0);
    reader_.CommitWritten(static_cast<size_t>(n));
  }
}

Status ConsumerIpcClient::ReadReply(uint64_t request_id, uint32_t timeout_ms,
                                    protos::ServiceToConsumer* reply) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return Status::Error("sluiced did not answer in time");
    reply->Clear();
    SLUICE_ASSIGN_OR_RETURN(bool got, ReadOneFrame(static_cast<uint32_t>(left), reply));
    if (!got) return Status::Error("sluiced did not answer in time");
    if (reply->request_id() != request_id) continue;  // Notification or stale answer.
    if (!reply->error().empty()) return Status::Error(reply->error());
    return Status::Ok();
  }
}

Status ConsumerIpcClient::Call(protos::ConsumerToService* request, protos::ServiceToConsumer* reply,
                               uint32_t timeout_ms, int fd) {
  SLUICE_RETURN_IF_ERROR(SendRequest(request, fd));
  return ReadReply(request->request_id(), timeout_ms, reply);
}

Status ConsumerIpcClient::EnableTracing(const perfetto::protos::TraceConfig& config, int output_fd,
                                        const SessionOptions& options) {
  protos::ConsumerToService req;
  auto* enable = req.mutable_enable_tracing();
  *enable->mutable_trace_config() = config;
  enable->set_key(options.key);
  enable->set_output_path(options.output_path);
  enable->set_output_temp_path(options.output_temp_path);
  if (options.rest_flush_period_ms) enable->set_rest_flush_period_ms(options.rest_flush_period_ms);
  if (options.rotation.enabled()) {
    enable->set_rotate_max_bytes(options.rotation.max_bytes);
    enable->set_rotate_max_ms(options.rotation.max_ms);
    enable->set_rotate_keep(options.rotation.keep);
    enable->set_rotate_stem(options.rotation.stem);
    enable->set_rotate_extension(options.rotation.extension);
  }
  protos::ServiceToConsumer reply;
  disabled_ = false;
  disabled_error_.clear();
  if (config.write_into_file() && config.output_path().empty() && output_fd < 0)
    return Status::Error("write_into_file without output_path needs the output file's fd");
  if (output_fd >= 0) enable->set_has_output_fd(true);
  return Call(&req, &reply, kRequestTimeoutMs, output_fd);
}

Status ConsumerIpcClient::StartTracing() {
  protos::ConsumerToService req;
  req.mutable_start_tracing();
  protos::ServiceToConsumer reply;
  return Call(&req, &reply);
}

StatusOr<bool> ConsumerIpcClient::Flush(uint32_t timeout_ms) {
  protos::ConsumerToService req;
  req.mutable_flush()->set_timeout_ms(timeout_ms);
  protos::ServiceToConsumer reply;
  SLUICE_RETURN_IF_ERROR(Call(&req, &reply, (timeout_ms ? timeout_ms : 60000) + kRequestTimeoutMs));
  return reply.flush().success();
}

Status ConsumerIpcClient::DisableTracing() {
  protos::ConsumerToService req;
  req.mutable_disable_tracing();
  protos::ServiceToConsumer reply;
  return Call(&req, &reply);
}

bool ConsumerIpcClient::WaitForTracingDisabled(uint32_t timeout_ms, std::string* error) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!disabled_ && clone_triggers_.empty() && finished_files_.empty()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    protos::ServiceToConsumer msg;
    auto got = ReadOneFrame(timeout_ms == kWaitForever ? kWaitForever : static_cast<uint32_t>(left), &msg,
                            interrupt_fd_);
    if (!got.ok()) {
      // The daemon is gone: the session is over for us.
      disabled_ = true;
      disabled_error_ = got.status().message();
    } else if (!*got) {
      return false;  // The time is up, or the interrupt fd is readable.
    }
  }
  if (!disabled_) return false;  // A clone trigger or a finished file came first.
  if (error) *error = disabled_error_;
  return true;
}

std::vector<std::string> ConsumerIpcClient::TakeCloneTriggers() {
  return std::exchange(clone_triggers_, {});
}

std::vector<std::string> ConsumerIpcClient::TakeFinishedFiles() {
  return std::exchange(finished_files_, {});
}

Status ConsumerIpcClient::ReadBuffers(const std::function<void(std::string_view)>& on_packet) {
  protos::ConsumerToService req;
  req.mutable_read_buffers();
  SLUICE_RETURN_IF_ERROR(SendRequest(&req));
  std::string partial;
  for (;;) {
    protos::ServiceToConsumer reply;
    SLUICE_RETURN_IF_ERROR(ReadReply(req.request_id(), kRequestTimeoutMs, &reply));
    for (const auto& slice : reply.read_buffers().slices()) {
      if (slice.last_slice_for_packet() && partial.empty()) {
        on_packet(slice.data());
        continue;
      }
      partial.append(slice.data());
      if (slice.last_slice_for_packet()) {
        on_packet(partial);
        partial.clear();
      }
    }
    if (reply.read_buffers().last()) return Status::Ok();
  }
}

StatusOr<perfetto::protos::TraceStats> ConsumerIpcClient::GetTraceStats() {
  protos::ConsumerToService req;
  req.mutable_get_trace_stats();
  protos::ServiceToConsumer reply;
  SLUICE_RETURN_IF_ERROR(Call(&req, &reply));
  return reply.get_trace_stats().trace_stats();
}

Status ConsumerIpcClient::FreeBuffers() {
  protos::ConsumerToService req;
  req.mutable_free_buffers();
  protos::ServiceToConsumer reply;
  return Call(&req, &reply);
}

}  // namespace sluice

namespace sluice {

Status ConsumerIpcClient::Detach(const std::string& key) {
  protos::ConsumerToService req;
  req.mutable_detach()->set_key(key);
  protos::ServiceToConsumer reply;
  return Call(&req, &reply);
}

StatusOr<AttachedSession> ConsumerIpcClient::Attach(const std::string& key) {
  protos::ConsumerToService req;
  req.mutable_attach()->set_key(key);
  protos::ServiceToConsumer reply;
  disabled_ = false;
  disabled_error_.clear();
  SLUICE_RETURN_IF_ERROR(Call(&req, &reply));
  AttachedSession attached;
  attached.info = SessionInfoFromProto(reply.attach().session());
  attached.config = reply.attach().trace_config();
  return attached;
}

StatusOr<SessionList> ConsumerIpcClient::ListSessions() {
  protos::ConsumerToService req;
  req.mutable_list_sessions();
  protos::ServiceToConsumer reply;
  SLUICE_RETURN_IF_ERROR(Call(&req, &reply));
  SessionList list;
  for (const auto& s : reply.list_sessions().sessions()) list.sessions.push_back(SessionInfoFromProto(s));
  list.other_users = reply.list_sessions().other_users();
  return list;
}

StatusOr<CloneResult> ConsumerIpcClient::CloneSession(const std::string& key) {
  protos::ConsumerToService req;
  req.mutable_clone_session()->set_key(key);
  protos::ServiceToConsumer reply;
  SLUICE_RETURN_IF_ERROR(Call(&req, &reply, kCloneFlushWaitMs + kRequestTimeoutMs));
  CloneResult result;
  result.source_id = reply.clone_session().source_session_id();
  result.flushed = reply.clone_session().flushed();
  if (reply.clone_session().has_compression()) {
    perfetto::protos::TraceConfig compression;
    *compression.mutable_compression() = reply.clone_session().compression();
    result.compression = TraceCompressionOf(compression);
  }
  return result;
}

StatusOr<ServiceState> ConsumerIpcClient::QueryServiceState() {
  protos::ConsumerToService req;
  req.mutable_query_service_state();
  protos::ServiceToConsumer reply;
  SLUICE_RETURN_IF_ERROR(Call(&req, &reply));
  const auto& r = reply.query_service_state();
  ServiceState st;
  for (const auto& p : r.producers())
    st.producers.push_back(ServiceState::ProducerInfo{p.id(), p.name(), p.pid(), p.uid()});
  for (const auto& d : r.data_sources())
    st.data_sources.push_back(ServiceState::DataSource{d.producer_id(), d.name()});
  st.num_sessions = r.num_sessions();
  st.num_sessions_started = r.num_sessions_started();
  st.service_version = r.service_version();
  return st;
}

}  // namespace sluice
