// The TraceStats of one period of a session: what happened between two
// moments, for a trace file that holds only that period (`sluice record
// --rotate`: each file ends with the stats of its own time, so a loss is
// counted in the file that misses the data, once, and the files of a
// fleet add up).
//
// Counters (bytes_written, chunks_overwritten, trace_writer_packet_loss, ...)
// become the difference between the two snapshots; values that describe the
// moment (buffer_size, producers_connected, tracing_sessions, ids) stay as the
// later snapshot has them. Generic over the message (protobuf reflection),
// so a counter added to TraceStats later is handled without a change here.
// A handful per file: off every hot path.
#ifndef SLUICE_SERVICE_TRACE_STATS_PERIOD_H_
#define SLUICE_SERVICE_TRACE_STATS_PERIOD_H_

#include "perfetto/common/trace_stats.pb.h"

namespace sluice {

// `later` minus `earlier`, counters only (see above). A counter smaller in
// `later` (a buffer cleared) is taken as it is, not wrapped.
perfetto::protos::TraceStats TraceStatsSince(const perfetto::protos::TraceStats& earlier,
                                             const perfetto::protos::TraceStats& later);

}  // namespace sluice

#endif  // SLUICE_SERVICE_TRACE_STATS_PERIOD_H_
