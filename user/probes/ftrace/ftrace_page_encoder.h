// FtracePageEncoder: raw ring-buffer pages of one CPU -> TracePackets holding
// FtraceEventBundles, written straight through a TraceWriter.
//
//   pages (trace_pipe_raw) ──FtracePageParser──▶ records ──translator──▶
//     TracePacket { ftrace_events: FtraceEventBundle {
//       cpu, event*, compact_sched?, lost_events?, error*,
//       previous_bundle_end_timestamp, ftrace_clock? ... } }
//
// Bundles. One EncodePages() call writes one bundle, except that:
//   - a page whose header says events were missed (RB_MISSED_EVENTS) starts
//     a new bundle with lost_events = true (the first page of a call does
//     not split: it just marks the call's bundle);
//   - a bundle holds kMaxPagesPerBundle pages at most, so that one packet
//     stays far below the central buffer's size whichever reader feeds the
//     encoder (the mapped reader encodes up to a whole ring between two
//     FinishBundle() calls);
//   - with compact_sched, a bundle also ends when its columns fill up or, at
//     a page boundary, when it interned more than kSoftMaxComms comms.
// Every bundle carries previous_bundle_end_timestamp: the timestamp of the
// last event of the previous bundle on this CPU (0 for the first), which
// tells trace_processor from when this CPU's data is complete. ftrace_clock
// is written only when the kernel clock is not the default (boot), as
// upstream does; with a clock snapshot (SetClockSnapshot) also the
// ftrace_timestamp/boot_timestamp pair.
//
// Bad input. A malformed page is skipped whole: its events are encoded into
// a staging buffer and undone if a bad event header turns up (the page is
// validated up front only if something must leave the staging buffer
// mid-page). It is counted in stats() by reason and noted in the bundle as
// an FtraceError (timestamp of the page, status). Records whose id has no loaded format are counted
// (unknown_event_ids) and skipped; records shorter than their format's fixed
// fields are counted (invalid_events) and skipped. Nothing here crashes on
// any input (tests/fuzz/ftrace_page_fuzzer.cc).
//
// See docs/FTRACE.md. Hot path: EncodePages() is allocation-free (the compact_sched columns are
// allocated once, in the constructor). Thread-safety: none; one encoder per
// CPU worker.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_PAGE_ENCODER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_PAGE_ENCODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "shm/trace_writer.h"
#include "user/probes/ftrace/ftrace_compact_sched.h"
#include "user/probes/ftrace/ftrace_event_translator.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_page_parser.h"

namespace sluice {

struct FtraceEncodeOptions {
  bool compact_sched = false;
  // FtraceClock enum value of FtraceEventBundle; 0 = unspecified/boot (not
  // written).
  uint32_t ftrace_clock = 0;
};

struct FtraceParseStats {
  uint64_t pages = 0;             // Pages given to EncodePages().
  uint64_t events = 0;            // Records written (compact ones included).
  uint64_t lost_event_pages = 0;  // Pages flagged RB_MISSED_EVENTS.
  uint64_t lost_events_known = 0; // Sum of the stored missed counts.
  uint64_t lost_event_pages_uncounted = 0;  // Flagged, but no room for the count.
  uint64_t parse_errors = 0;      // Malformed pages (skipped).
  uint64_t errors_by_status[kFtraceParseStatusCount] = {};
  uint64_t unknown_event_ids = 0; // Records with an id without format.
  uint64_t invalid_events = 0;    // Records shorter than their format.
  uint64_t bundles = 0;           // Bundles (packets) written.
  uint64_t compact_switch = 0;    // sched_switch written in compact form.
  uint64_t compact_waking = 0;    // sched_waking written in compact form.
};

class FtracePageEncoder {
 public:
  // Pages per FtraceEventBundle at most: 32 x 4 KiB pages are ~100 KiB of
  // protos, well below the central buffer's chunk budget.
  static constexpr size_t kMaxPagesPerBundle = 32;

  // `table` must outlive the encoder. Builds its own translator.
  FtracePageEncoder(const FtraceFormatTable* table, uint32_t cpu, FtraceEncodeOptions options);
  // Shares `translator` (and its table), which must outlive the encoder:
  // one translator for all CPUs saves building it per CPU.
  FtracePageEncoder(const FtraceEventTranslator* translator, uint32_t cpu,
                    FtraceEncodeOptions options);
  ~FtracePageEncoder();

  // A pair of readings of the ftrace clock and CLOCK_BOOTTIME taken at the
  // same time; written into the following bundles when ftrace_clock is set.
  void SetClockSnapshot(int64_t ftrace_timestamp, int64_t boot_timestamp) {
    ftrace_timestamp_ = ftrace_timestamp;
    boot_timestamp_ = boot_timestamp;
  }

  // Parses each page (as read from trace_pipe_raw; `page_size` bytes each,
  // contiguous in `pages`) and writes FtraceEventBundle packet(s) for this
  // CPU into `writer`. Malformed pages are counted and skipped.
  void EncodePages(const uint8_t* pages, size_t page_count, size_t page_size,
                   TraceWriter* writer);

  // The in-place form (a sub-buffer read through the ring buffer's memory
  // mapping, ftrace_mapped_cpu_reader.h): encodes one page into the bundle
  // being written, which stays open for the next page until FinishBundle().
  // `resume_offset` > 0 continues a page an earlier call encoded up to that
  // byte (the reader page the kernel kept writing into): the records before
  // it are walked for their timestamps but not written again, and the page's
  // missed-events flags, already counted, are not counted twice. Returns the
  // offset where the page's data ended (data_offset + the commit it read;
  // the offset to resume at next time), or 0 if the page header is invalid.
  size_t EncodePage(const uint8_t* page, size_t page_size, size_t resume_offset, TraceWriter* writer);
  void FinishBundle() {
    if (bundle_) EndBundle();
  }

  const FtraceParseStats& stats() const { return stats_; }
  const FtraceEventTranslator& translator() const { return *translator_; }
  // True if sched_switch / sched_waking are written in compact form.
  bool compact_switch() const { return compact_switch_; }
  bool compact_waking() const { return compact_waking_; }
  // Timestamp of the last event written on this CPU (0 if none yet).
  uint64_t last_event_timestamp() const { return last_event_ts_; }

 private:
  FtracePageEncoder(const FtraceEventTranslator* translator, uint32_t cpu,
                    FtraceEncodeOptions options, bool owned);
  void BeginBundle(TraceWriter* writer, bool lost_events);
  void EndBundle();
  // Encodes the records of a page whose header is valid; on a malformed
  // event header undoes the page and returns the status.
  FtraceParseStatus EncodeRecords(const FtracePageHeader& header, const uint8_t* page,
                                  size_t resume_offset, TraceWriter* writer);
  struct Mark {
    uint8_t* staged_end = nullptr;
    FtraceParseStats stats;
    uint64_t last_event_ts = 0;
    CompactSchedBuffer::Mark compact;
  };
  Mark GetMark() const;
  void Rollback(const Mark& mark);
  void NoteError(FtraceParseStatus status, uint64_t timestamp);
  // Hands the staged events to the bundle's writer.
  void FlushStaged() {
    if (staged_end_ != staging_.get()) {
      bundle_->WriteRaw(staging_.get(), static_cast<size_t>(staged_end_ - staging_.get()));
      staged_end_ = staging_.get();
    }
  }

  const FtraceFormatTable* table_;
  const uint32_t cpu_;
  const FtraceEncodeOptions options_;
  std::unique_ptr<const FtraceEventTranslator> owned_translator_;
  const FtraceEventTranslator* translator_;
  CompactSchedFormat compact_format_;
  bool compact_switch_ = false;
  bool compact_waking_ = false;
  std::unique_ptr<CompactSchedBuffer> compact_;
  int64_t ftrace_timestamp_ = 0;
  int64_t boot_timestamp_ = 0;

  // The bundle being written, if any.
  TraceWriter::Packet packet_;
  ProtoWriter* bundle_ = nullptr;
  // Encoded events not yet handed to bundle_. Events are encoded here and
  // copied to the writer a page (or kStagingBytes) at a time: one large copy
  // instead of one small copy per event, each of which would have to wait
  // for the bytes just stored (store-to-load forwarding fails on such
  // copies). Flushed before anything else is written to the bundle.
  static constexpr size_t kStagingBytes = 16 * 1024;
  std::unique_ptr<uint8_t[]> staging_;
  uint8_t* staged_end_ = nullptr;
  // Timestamp of the last event written on this CPU: while a bundle is being
  // begun, that of the previous bundle's last event.
  uint64_t last_event_ts_ = 0;
  // Pages begun in the bundle being written (a resumed page counts once).
  size_t bundle_pages_ = 0;
  FtraceParseStats stats_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_PAGE_ENCODER_H_
