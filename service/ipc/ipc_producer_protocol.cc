#include "service/ipc/ipc_producer_protocol.h"

#include <cstring>

#include "google/protobuf/unknown_field_set.h"
#include "sluice/service_extra.pb.h"

namespace sluice {

void CommitDataToProto(const CommitDataRequest& request, protos::CommitDataRequest* out) {
  for (const ChunkToMove& m : request.chunks_to_move) {
    auto* c = out->add_chunks_to_move();
    c->set_page(m.page);
    c->set_chunk(m.chunk);
    c->set_target_buffer(m.target_buffer);
  }
  protos::CommitDataRequest::ChunkToPatch* group = nullptr;
  const ChunkPatch* prev = nullptr;
  for (const ChunkPatch& p : request.chunks_to_patch) {
    // A group ends at a patch without has_more_patches: the flag is per group.
    bool same_chunk = prev && prev->has_more_patches && prev->target_buffer == p.target_buffer &&
                      prev->writer_id == p.writer_id && prev->chunk_id == p.chunk_id;
    if (!same_chunk) {
      group = out->add_chunks_to_patch();
      group->set_target_buffer(p.target_buffer);
      group->set_writer_id(p.writer_id);
      group->set_chunk_id(p.chunk_id);
    }
    auto* patch = group->add_patches();
    patch->set_offset(p.offset);
    patch->set_data(reinterpret_cast<const char*>(p.data), sizeof(p.data));
    group->set_has_more_patches(p.has_more_patches);
    prev = &p;
  }
  if (request.flush_request_id) out->set_flush_request_id(request.flush_request_id);
}

void CommitDataFromProto(const protos::CommitDataRequest& msg, CommitDataRequest* out,
                         uint32_t* malformed) {
  out->clear();
  *malformed = 0;
  out->chunks_to_move.reserve(static_cast<size_t>(msg.chunks_to_move_size()));
  for (const auto& c : msg.chunks_to_move())
    out->chunks_to_move.push_back(ChunkToMove{c.page(), c.chunk(), c.target_buffer()});
  for (const auto& group : msg.chunks_to_patch()) {
    if (group.writer_id() > 0xffff) {
      (*malformed)++;
      continue;
    }
    int n = group.patches_size();
    for (int i = 0; i < n; i++) {
      const auto& patch = group.patches(i);
      if (patch.data().size() != sizeof(ChunkPatch::data)) {
        (*malformed)++;
        continue;
      }
      ChunkPatch p;
      p.target_buffer = group.target_buffer();
      p.writer_id = static_cast<uint16_t>(group.writer_id());
      p.chunk_id = group.chunk_id();
      p.offset = patch.offset();
      memcpy(p.data, patch.data().data(), sizeof(p.data));
      p.has_more_patches = i + 1 < n ? true : group.has_more_patches();
      out->chunks_to_patch.push_back(p);
    }
  }
  out->flush_request_id = msg.flush_request_id();
}

void SetRegisterTraceWriter(protos::ProducerToService* msg, uint16_t writer_id,
                            uint32_t target_buffer) {
  protos::RegisterTraceWriter r;
  r.set_writer_id(writer_id);
  r.set_target_buffer(target_buffer);
  msg->GetReflection()->MutableUnknownFields(msg)->AddLengthDelimited(kRegisterTraceWriterField,
                                                                      r.SerializeAsString());
}

void SetUnregisterTraceWriter(protos::ProducerToService* msg, uint16_t writer_id) {
  protos::UnregisterTraceWriter r;
  r.set_writer_id(writer_id);
  msg->GetReflection()->MutableUnknownFields(msg)->AddLengthDelimited(kUnregisterTraceWriterField,
                                                                      r.SerializeAsString());
}

WriterEvent GetWriterEvent(const protos::ProducerToService& msg) {
  WriterEvent ev;
  const google::protobuf::UnknownFieldSet& fields = msg.GetReflection()->GetUnknownFields(msg);
  for (int i = 0; i < fields.field_count(); i++) {
    const google::protobuf::UnknownField& f = fields.field(i);
    if (f.number() != kRegisterTraceWriterField && f.number() != kUnregisterTraceWriterField)
      continue;
    if (f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      ev.kind = WriterEvent::kMalformed;
      return ev;
    }
    if (f.number() == kRegisterTraceWriterField) {
      protos::RegisterTraceWriter r;
      if (!r.ParseFromString(f.length_delimited())) {
        ev.kind = WriterEvent::kMalformed;
        return ev;
      }
      ev.kind = WriterEvent::kRegister;
      ev.writer_id = r.writer_id();
      ev.target_buffer = r.target_buffer();
    } else {
      protos::UnregisterTraceWriter r;
      if (!r.ParseFromString(f.length_delimited())) {
        ev.kind = WriterEvent::kMalformed;
        return ev;
      }
      ev.kind = WriterEvent::kUnregister;
      ev.writer_id = r.writer_id();
    }
    return ev;
  }
  return ev;
}

bool ForwardProducerRequest(const protos::ProducerToService& msg, ProducerEndpoint* endpoint) {
  switch (msg.msg_case()) {
    case protos::ProducerToService::kRegisterDataSource: {
      const auto& r = msg.register_data_source();
      DataSourceDescriptor d;
      d.name = r.name();
      d.will_notify_on_start = r.will_notify_on_start();
      d.will_notify_on_stop = r.will_notify_on_stop();
      d.handles_incremental_state_clear = r.handles_incremental_state_clear();
      endpoint->RegisterDataSource(d);
      return true;
    }
    case protos::ProducerToService::kUnregisterDataSource:
      endpoint->UnregisterDataSource(msg.unregister_data_source().name());
      return true;
    case protos::ProducerToService::kDataSourceStarted:
      endpoint->NotifyDataSourceStarted(msg.data_source_started().data_source_id());
      return true;
    case protos::ProducerToService::kDataSourceStopped:
      endpoint->NotifyDataSourceStopped(msg.data_source_stopped().data_source_id());
      return true;
    case protos::ProducerToService::kNotifyFlushComplete:
      endpoint->NotifyFlushComplete(msg.notify_flush_complete().flush_request_id());
      return true;
    case protos::ProducerToService::kActivateTriggers: {
      const auto& names = msg.activate_triggers().trigger_names();
      endpoint->ActivateTriggers(std::vector<std::string>(names.begin(), names.end()));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace sluice
