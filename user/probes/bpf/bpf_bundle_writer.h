// BpfBundleWriter: the FtraceEventBundle being written for one CPU.
//
// The BPF source writes what the ftrace source writes: per CPU, a sequence
// of TracePackets each holding one FtraceEventBundle, on that CPU's own
// TraceWriter (one sequence per CPU, so bundles of one CPU stay in order).
//
//   TracePacket {
//     ftrace_events (1) = FtraceEventBundle {
//       cpu (1)
//       lost_events (3)                     true if records of this CPU were
//                                           dropped since the previous bundle
//       previous_bundle_end_timestamp (10)  ts of the previous bundle's last
//                                           event on this CPU
//       event (2) ... (user/probes/bpf/bpf_event_decoder.h)
//     }
//   }
//
// A bundle opens at the first record after Close() and closes after
// `max_events` events or at Close() (end of a drain cycle). Records the
// decoder rejects are counted, never written.
//
// Thread-safety: none; the owner's reader thread uses it. The counters are
// read by that thread (which publishes them, see BpfDataSource).
// Hot path (Append): allocation-free.
#ifndef SLUICE_USER_PROBES_BPF_BPF_BUNDLE_WRITER_H_
#define SLUICE_USER_PROBES_BPF_BPF_BUNDLE_WRITER_H_

#include <cstddef>
#include <cstdint>

#include "shm/trace_writer.h"

namespace sluice {

class BpfBundleWriter {
 public:
  static constexpr uint32_t kDefaultMaxEvents = 1024;

  BpfBundleWriter(uint32_t cpu, TraceWriter* writer,
                  uint32_t max_events = kDefaultMaxEvents);
  BpfBundleWriter(const BpfBundleWriter&) = delete;
  BpfBundleWriter& operator=(const BpfBundleWriter&) = delete;
  ~BpfBundleWriter() { Close(); }

  // One ring record (untrusted bytes). Counts it as delivered.
  void Append(const uint8_t* record_untrusted, size_t size);
  // Ends the open bundle, if any.
  void Close();
  // The next bundle carries lost_events = true.
  void MarkLost() { lost_pending_ = true; }
  // If a loss is pending, writes an empty bundle carrying it, so a loss at
  // the very end of a trace is not left unsaid (Stop()).
  void FlushPendingLoss();

  uint32_t cpu() const { return cpu_; }
  TraceWriter* writer() const { return writer_; }
  uint64_t delivered() const { return delivered_; }
  uint64_t decode_errors() const { return decode_errors_; }
  uint64_t events() const { return events_; }
  uint64_t bundles() const { return bundles_; }

 private:
  void Open();

  const uint32_t cpu_;
  TraceWriter* const writer_;
  const uint32_t max_events_;

  TraceWriter::Packet packet_;
  bool open_ = false;
  bool lost_pending_ = false;
  uint32_t events_in_bundle_ = 0;
  uint64_t last_ts_ = 0;             // of the last event written
  uint64_t prev_bundle_end_ts_ = 0;  // last_ts_ when the previous bundle closed

  uint64_t delivered_ = 0;
  uint64_t decode_errors_ = 0;
  uint64_t events_ = 0;
  uint64_t bundles_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_BPF_BPF_BUNDLE_WRITER_H_
