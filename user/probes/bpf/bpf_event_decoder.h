// BpfEventDecoder: one record from a BPF ring (bpf/sluice_record.h and the
// bpf/<probe>.h layouts) -> one FtraceEvent, written with ProtoWriter into
// the FtraceEventBundle being built (user/probes/bpf/bpf_bundle_writer.h).
//
// The output is the FtraceEvent the ftrace source writes for the same
// kernel event: same fields, same values (see docs/BPF.md for the three
// places where the BPF programs see more or less than the format file):
//
//   FtraceEventBundle.event (2) {
//     timestamp (1)   record ts (CLOCK_BOOTTIME ns, = trace_clock "boot")
//     pid (2)         record pid (ftrace's common_pid)
//     sched_switch (4) | sched_waking (20) | ... | print (3) { fields }
//   }
//
// The record bytes are untrusted (they come from a ring the kernel and BPF
// programs write): the type is checked against the decoder table, the size
// against the record's struct, strings are bounded by their arrays, the
// marker payload by the record size. A bad record writes nothing and
// returns its reason; the caller counts it.
//
// Adding an event: a record layout in bpf/<probe>.h, a Decode* function in
// the .cc and a row in its table (indexed by enum sluice_record_type).
//
// Hot path: allocation-free, no locks; one memcpy of the fixed part.
#ifndef SLUICE_USER_PROBES_BPF_BPF_EVENT_DECODER_H_
#define SLUICE_USER_PROBES_BPF_BPF_EVENT_DECODER_H_

#include <cstddef>
#include <cstdint>

#include "shm/proto_writer.h"

namespace sluice {

class BpfEventDecoder {
 public:
  enum class Result : uint8_t {
    kOk,
    kTooShort,     // smaller than its type's struct (or than the header)
    kUnknownType,  // type not in the table
    kBadPayload,   // variable part runs past the record
  };

  struct Header {
    uint64_t ts = 0;
    uint32_t pid = 0;
    uint16_t type = 0;
    uint16_t cpu = 0;
  };

  // Reads the common header; false if the record is too short for one.
  static bool ReadHeader(const uint8_t* record_untrusted, size_t size, Header* out);

  // Writes FtraceEventBundle.event for the record into `w` (inside an open
  // FtraceEventBundle). Nothing is written unless the result is kOk.
  static Result Decode(const uint8_t* record_untrusted, size_t size, ProtoWriter* w);

  // sched_switch's prev_state as the kernel's format reports it, from the
  // raw task state: the logic of __trace_sched_switch_state() in
  // include/trace/events/sched.h (v5.15+ state bits; see the .cc).
  static int64_t FtracePrevState(uint32_t raw_state, uint32_t exit_state, bool preempt);
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_BPF_BPF_EVENT_DECODER_H_
