#include "user/probes/bpf/bpf_bundle_writer.h"

#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "user/probes/bpf/bpf_event_decoder.h"

namespace sluice {

namespace pp = perfetto::protos;

BpfBundleWriter::BpfBundleWriter(uint32_t cpu, TraceWriter* writer, uint32_t max_events)
    : cpu_(cpu), writer_(writer), max_events_(max_events ? max_events : 1) {}

void BpfBundleWriter::Open() {
  packet_ = writer_->NewTracePacket();
  packet_->BeginNested(pp::TracePacket::kFtraceEventsFieldNumber);
  packet_->WriteVarInt(pp::FtraceEventBundle::kCpuFieldNumber, cpu_);
  if (lost_pending_) {
    packet_->WriteVarInt(pp::FtraceEventBundle::kLostEventsFieldNumber, 1);
    lost_pending_ = false;
  }
  if (prev_bundle_end_ts_) {
    packet_->WriteVarInt(pp::FtraceEventBundle::kPreviousBundleEndTimestampFieldNumber,
                         prev_bundle_end_ts_);
  }
  open_ = true;
  events_in_bundle_ = 0;
}

void BpfBundleWriter::Append(const uint8_t* record_untrusted, size_t size) {
  delivered_++;
  BpfEventDecoder::Header h;
  if (!BpfEventDecoder::ReadHeader(record_untrusted, size, &h)) {
    decode_errors_++;
    return;
  }
  if (!open_) Open();
  if (BpfEventDecoder::Decode(record_untrusted, size, packet_.writer()) !=
      BpfEventDecoder::Result::kOk) {
    decode_errors_++;
    return;
  }
  last_ts_ = h.ts;
  events_++;
  if (++events_in_bundle_ >= max_events_) Close();
}

void BpfBundleWriter::FlushPendingLoss() {
  if (!lost_pending_) return;
  Close();
  Open();
  Close();
}

void BpfBundleWriter::Close() {
  if (!open_) return;
  packet_->EndNested();
  packet_.Finalize();
  open_ = false;
  bundles_++;
  prev_bundle_end_ts_ = last_ts_;
}

}  // namespace sluice
