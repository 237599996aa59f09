#include "service/ipc/session_description.h"

namespace sluice {

void SessionInfoToProto(const SessionInfo& info, protos::SessionDescription* out) {
  out->set_id(info.id);
  out->set_key(info.key);
  out->set_unique_session_name(info.unique_session_name);
  out->set_owner_uid(info.owner_uid);
  out->set_consumer_pid(info.consumer_pid);
  switch (info.state) {
    case SessionInfo::State::kConfigured: out->set_state(protos::SessionDescription::CONFIGURED); break;
    case SessionInfo::State::kStarted: out->set_state(protos::SessionDescription::STARTED); break;
    case SessionInfo::State::kStopping: out->set_state(protos::SessionDescription::STOPPING); break;
    case SessionInfo::State::kEnded: out->set_state(protos::SessionDescription::ENDED); break;
  }
  out->set_detached(info.detached);
  out->set_cloned_from(info.cloned_from);
  out->set_age_ms(info.age_ms);
  out->set_duration_ms(info.duration_ms);
  out->set_write_into_file(info.write_into_file);
  for (const std::string& name : info.data_sources) out->add_data_sources(name);
  for (const SessionInfo::Buffer& b : info.buffers) {
    auto* buffer = out->add_buffers();
    buffer->set_size_bytes(b.size_bytes);
    buffer->set_discard(b.discard);
    buffer->set_bytes_held(b.bytes_held);
  }
  out->set_file_bytes(info.file_bytes);
  out->set_output_path(info.output_path);
  out->set_output_temp_path(info.output_temp_path);
  out->set_chunks_overwritten(info.chunks_overwritten);
  out->set_chunks_discarded(info.chunks_discarded);
  out->set_patches_failed(info.patches_failed);
  out->set_abi_violations(info.abi_violations);
  out->set_trace_writer_packet_loss(info.trace_writer_packet_loss);
  out->set_flushes_failed(info.flushes_failed);
  out->set_chunks_lost(info.chunks_lost);
  out->set_error(info.error);
  out->set_triggers(info.triggers);
}

SessionInfo SessionInfoFromProto(const protos::SessionDescription& in) {
  SessionInfo info;
  info.id = in.id();
  info.key = in.key();
  info.unique_session_name = in.unique_session_name();
  info.owner_uid = in.owner_uid();
  info.consumer_pid = in.consumer_pid();
  switch (in.state()) {
    case protos::SessionDescription::STATE_UNSPECIFIED:
    case protos::SessionDescription::CONFIGURED: info.state = SessionInfo::State::kConfigured; break;
    case protos::SessionDescription::STARTED: info.state = SessionInfo::State::kStarted; break;
    case protos::SessionDescription::STOPPING: info.state = SessionInfo::State::kStopping; break;
    case protos::SessionDescription::ENDED: info.state = SessionInfo::State::kEnded; break;
  }
  info.detached = in.detached();
  info.cloned_from = in.cloned_from();
  info.age_ms = in.age_ms();
  info.duration_ms = in.duration_ms();
  info.write_into_file = in.write_into_file();
  info.data_sources.assign(in.data_sources().begin(), in.data_sources().end());
  for (const auto& b : in.buffers())
    info.buffers.push_back(SessionInfo::Buffer{b.size_bytes(), b.discard(), b.bytes_held()});
  info.file_bytes = in.file_bytes();
  info.output_path = in.output_path();
  info.output_temp_path = in.output_temp_path();
  info.chunks_overwritten = in.chunks_overwritten();
  info.chunks_discarded = in.chunks_discarded();
  info.patches_failed = in.patches_failed();
  info.abi_violations = in.abi_violations();
  info.trace_writer_packet_loss = in.trace_writer_packet_loss();
  info.flushes_failed = in.flushes_failed();
  info.chunks_lost = in.chunks_lost();
  info.triggers = in.triggers();
  info.error = in.error();
  return info;
}

}  // namespace sluice
