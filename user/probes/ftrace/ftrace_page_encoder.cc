#include "user/probes/ftrace/ftrace_page_encoder.h"

#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/ftrace/ftrace_stats.pb.h"
#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {

namespace {

using perfetto::protos::FtraceEventBundle;
using perfetto::protos::FtraceEventBundle_FtraceError;
using perfetto::protos::TracePacket;

#define SLUICE_CHECK_STATUS(ours, theirs)                                      \
  static_assert(static_cast<int>(FtraceParseStatus::ours) == perfetto::protos::theirs, \
                #ours " differs from the proto enum")
SLUICE_CHECK_STATUS(kOk, FTRACE_STATUS_OK);
SLUICE_CHECK_STATUS(kUnexpectedReadError, FTRACE_STATUS_UNEXPECTED_READ_ERROR);
SLUICE_CHECK_STATUS(kPartialPageRead, FTRACE_STATUS_PARTIAL_PAGE_READ);
SLUICE_CHECK_STATUS(kAbiInvalidPageHeader, FTRACE_STATUS_ABI_INVALID_PAGE_HEADER);
SLUICE_CHECK_STATUS(kAbiShortEventHeader, FTRACE_STATUS_ABI_SHORT_EVENT_HEADER);
SLUICE_CHECK_STATUS(kAbiNullPadding, FTRACE_STATUS_ABI_NULL_PADDING);
SLUICE_CHECK_STATUS(kAbiShortPaddingLength, FTRACE_STATUS_ABI_SHORT_PADDING_LENGTH);
SLUICE_CHECK_STATUS(kAbiInvalidPaddingLength, FTRACE_STATUS_ABI_INVALID_PADDING_LENGTH);
SLUICE_CHECK_STATUS(kAbiShortTimeExtend, FTRACE_STATUS_ABI_SHORT_TIME_EXTEND);
SLUICE_CHECK_STATUS(kAbiShortTimeStamp, FTRACE_STATUS_ABI_SHORT_TIME_STAMP);
SLUICE_CHECK_STATUS(kAbiShortDataLength, FTRACE_STATUS_ABI_SHORT_DATA_LENGTH);
SLUICE_CHECK_STATUS(kAbiZeroDataLength, FTRACE_STATUS_ABI_ZERO_DATA_LENGTH);
SLUICE_CHECK_STATUS(kAbiInvalidDataLength, FTRACE_STATUS_ABI_INVALID_DATA_LENGTH);
SLUICE_CHECK_STATUS(kAbiShortEventId, FTRACE_STATUS_ABI_SHORT_EVENT_ID);
SLUICE_CHECK_STATUS(kAbiEndOverflow, FTRACE_STATUS_ABI_END_OVERFLOW);
SLUICE_CHECK_STATUS(kShortCompactEvent, FTRACE_STATUS_SHORT_COMPACT_EVENT);
SLUICE_CHECK_STATUS(kInvalidEvent, FTRACE_STATUS_INVALID_EVENT);
#undef SLUICE_CHECK_STATUS
static_assert(kFtraceParseStatusCount == perfetto::protos::FtraceParseStatus_ARRAYSIZE);

}  // namespace

FtracePageEncoder::FtracePageEncoder(const FtraceFormatTable* table, uint32_t cpu,
                                     FtraceEncodeOptions options)
    : FtracePageEncoder(new FtraceEventTranslator(table), cpu, options, true) {}

FtracePageEncoder::FtracePageEncoder(const FtraceEventTranslator* translator, uint32_t cpu,
                                     FtraceEncodeOptions options)
    : FtracePageEncoder(translator, cpu, options, false) {}

FtracePageEncoder::FtracePageEncoder(const FtraceEventTranslator* translator, uint32_t cpu,
                                     FtraceEncodeOptions options, bool owned)
    : table_(&translator->table()),
      cpu_(cpu),
      options_(options),
      owned_translator_(owned ? translator : nullptr),
      translator_(translator),
      staging_(new uint8_t[kStagingBytes]),
      staged_end_(staging_.get()) {
  if (options_.compact_sched) {
    compact_format_ = CompactSchedFormat::FromTable(*table_);
    compact_switch_ = compact_format_.switch_valid;
    compact_waking_ = compact_format_.waking_valid;
    if (compact_switch_ || compact_waking_) compact_ = std::make_unique<CompactSchedBuffer>();
  }
}

FtracePageEncoder::~FtracePageEncoder() {
  if (bundle_) EndBundle();
}

void FtracePageEncoder::BeginBundle(TraceWriter* writer, bool lost_events) {
  packet_ = writer->NewTracePacket();
  bundle_ = packet_.writer();
  bundle_->BeginNested(TracePacket::kFtraceEventsFieldNumber);
  bundle_->WriteVarInt(FtraceEventBundle::kCpuFieldNumber, cpu_);
  if (lost_events) bundle_->WriteVarInt(FtraceEventBundle::kLostEventsFieldNumber, 1);
  // The last event written on this CPU belongs to the previous bundle.
  bundle_->WriteVarInt(FtraceEventBundle::kPreviousBundleEndTimestampFieldNumber,
                       last_event_ts_);
  if (options_.ftrace_clock != 0) {
    bundle_->WriteVarInt(FtraceEventBundle::kFtraceClockFieldNumber, options_.ftrace_clock);
    if (ftrace_timestamp_ != 0 || boot_timestamp_ != 0) {
      bundle_->WriteInt(FtraceEventBundle::kFtraceTimestampFieldNumber, ftrace_timestamp_);
      bundle_->WriteInt(FtraceEventBundle::kBootTimestampFieldNumber, boot_timestamp_);
    }
  }
  stats_.bundles++;
  bundle_pages_ = 0;
}

void FtracePageEncoder::EndBundle() {
  FlushStaged();
  if (compact_) compact_->WriteAndReset(bundle_);
  bundle_->EndNested();
  bundle_ = nullptr;
  packet_.Finalize();
}

void FtracePageEncoder::NoteError(FtraceParseStatus status, uint64_t timestamp) {
  stats_.parse_errors++;
  stats_.errors_by_status[static_cast<size_t>(status)]++;
  FlushStaged();
  bundle_->BeginNested(FtraceEventBundle::kErrorFieldNumber);
  bundle_->WriteVarInt(FtraceEventBundle_FtraceError::kTimestampFieldNumber, timestamp);
  bundle_->WriteVarInt(FtraceEventBundle_FtraceError::kStatusFieldNumber,
                       static_cast<uint32_t>(status));
  bundle_->EndNested();
}

void FtracePageEncoder::EncodePages(const uint8_t* pages, size_t page_count, size_t page_size,
                                    TraceWriter* writer) {
  for (size_t i = 0; i < page_count; i++) EncodePage(pages + i * page_size, page_size, 0, writer);
  FinishBundle();
}

size_t FtracePageEncoder::EncodePage(const uint8_t* page, size_t page_size, size_t resume_offset,
                                     TraceWriter* writer) {
  const FtraceHeaderFormat& format = table_->header();
  const bool first_read = resume_offset == 0;
  if (first_read) stats_.pages++;
  FtracePageHeader header;
  FtraceParseStatus status = FtracePageParser::ParseHeader(format, page, page_size, &header);
  if (status != FtraceParseStatus::kOk) {
    if (!bundle_) BeginBundle(writer, false);
    uint64_t ts = 0;
    if (page_size >= format.timestamp_offset + 8) memcpy(&ts, page + format.timestamp_offset, sizeof(ts));
    NoteError(status, ts);
    return 0;
  }
  if (header.missed_events && first_read) {
    stats_.lost_event_pages++;
    if (header.missed_stored) {
      stats_.lost_events_known += header.missed_count;
    } else {
      stats_.lost_event_pages_uncounted++;
    }
    if (bundle_) EndBundle();
    BeginBundle(writer, true);
  } else if (!bundle_) {
    BeginBundle(writer, false);
  } else if ((first_read && bundle_pages_ >= kMaxPagesPerBundle) ||
             (compact_ && compact_->comm_count() > CompactSchedBuffer::kSoftMaxComms)) {
    EndBundle();
    BeginBundle(writer, false);
  }
  if (first_read) bundle_pages_++;
  status = EncodeRecords(header, page, resume_offset, writer);
  if (status != FtraceParseStatus::kOk) NoteError(status, header.timestamp);
  return format.data_offset + header.data_size;
}

FtraceParseStatus FtracePageEncoder::EncodeRecords(const FtracePageHeader& header,
                                                   const uint8_t* page, size_t resume_offset,
                                                   TraceWriter* writer) {
  const FtraceHeaderFormat& format = table_->header();
  // One pass, with a way back: until something of this page leaves the
  // staging buffer (a flush, a big event, a compact bundle ending), all of
  // it can be undone if the page turns out malformed. Before the first such
  // point the whole page is validated (a second, header-only pass), so a bad
  // page is skipped whole either way; the common page needs one pass only.
  const Mark mark = GetMark();
  bool validated = false;
  FtraceParseStatus invalid = FtraceParseStatus::kOk;
  auto may_commit = [&]() -> bool {
    if (!validated) {
      validated = true;
      invalid = FtracePageParser::ForEachRecord(format, header, page, [](const FtraceRecord&) {});
    }
    return invalid == FtraceParseStatus::kOk;
  };
  FtraceParseStatus status = FtracePageParser::ForEachRecord(
      format, header, page, [&](const FtraceRecord& r) -> bool {
        // Written by the call that read the page up to resume_offset.
        if (static_cast<size_t>(r.data - page) < resume_offset) return true;
        uint32_t id = 0;
        FtraceEventTranslator::ReadEventId(r, &id);  // size >= 2: checked by the parser.
        if (compact_) {
          const bool is_switch = compact_switch_ && id == compact_format_.switch_id;
          const bool is_waking = compact_waking_ && id == compact_format_.waking_id;
          if (is_switch || is_waking) {
            if (r.size < (is_switch ? compact_format_.switch_min_size
                                    : compact_format_.waking_min_size)) {
              stats_.invalid_events++;
              return true;
            }
            if (compact_->full()) {
              if (!may_commit()) return false;
              EndBundle();
              BeginBundle(writer, false);
            }
            if (is_switch) {
              compact_->AppendSwitch(compact_format_, r);
              stats_.compact_switch++;
            } else {
              compact_->AppendWaking(compact_format_, r);
              stats_.compact_waking++;
            }
            stats_.events++;
            last_event_ts_ = r.timestamp;
            return true;
          }
        }
        const FtraceEventTranslation* t = translator_->Find(id);
        if (t == nullptr) {
          stats_.unknown_event_ids++;
          return true;
        }
        const size_t bound = FtraceEventTranslator::EncodedSizeBound(*t, r);
        if (bound == 0) {
          stats_.invalid_events++;
          return true;
        }
        if (bound > FtraceEventTranslator::kMaxEncodedEventBytes) {
          if (!may_commit()) return false;
          FlushStaged();
          translator_->WriteEventNested(*t, r, bundle_);
        } else {
          if (bound > static_cast<size_t>(staging_.get() + kStagingBytes - staged_end_)) {
            if (!may_commit()) return false;
            FlushStaged();
          }
          staged_end_ = FtraceEventTranslator::EncodeEvent(*t, r, staged_end_);
        }
        stats_.events++;
        last_event_ts_ = r.timestamp;
        return true;
      });
  if (invalid != FtraceParseStatus::kOk) status = invalid;
  if (status == FtraceParseStatus::kOk) return status;
  // Malformed: nothing of the page has left the staging buffer.
  Rollback(mark);
  return status;
}

FtracePageEncoder::Mark FtracePageEncoder::GetMark() const {
  Mark m;
  m.staged_end = staged_end_;
  m.stats = stats_;
  m.last_event_ts = last_event_ts_;
  if (compact_) m.compact = compact_->GetMark();
  return m;
}

void FtracePageEncoder::Rollback(const Mark& m) {
  staged_end_ = m.staged_end;
  // Keep the page counters; undo what the page's events added.
  const FtraceParseStats now = stats_;
  stats_ = m.stats;
  stats_.pages = now.pages;
  stats_.lost_event_pages = now.lost_event_pages;
  stats_.lost_events_known = now.lost_events_known;
  stats_.lost_event_pages_uncounted = now.lost_event_pages_uncounted;
  stats_.bundles = now.bundles;
  last_event_ts_ = m.last_event_ts;
  if (compact_) compact_->Rollback(m.compact);
}

}  // namespace sluice
