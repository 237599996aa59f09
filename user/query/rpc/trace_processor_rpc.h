// The methods of trace_processor's RPC interface (what `trace_processor_shell
// -D` serves over HTTP and Perfetto's Python API calls), over sluice's query
// engine: status, trace upload in chunks, queries streamed in batches,
// restoring the initial tables, and trace summaries. Arguments and results
// are serialized protos of protos/perfetto/trace_processor/
// trace_processor.proto; a malformed argument gets an error in the result,
// never a crash. Transport-free: user/cmd/query_httpd.h puts it on HTTP.
//
// Not thread-safe: the server makes one call at a time.
#ifndef SLUICE_USER_QUERY_RPC_TRACE_PROCESSOR_RPC_H_
#define SLUICE_USER_QUERY_RPC_TRACE_PROCESSOR_RPC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shm/base/status.h"
#include "user/query/rpc/query_result_stream.h"

namespace sluice {

class QueryEngine;

class TraceProcessorRpc {
 public:
  // Uploads (AppendTraceData) past `max_trace_bytes` in all fail, so a
  // client cannot fill the disk.
  explicit TraceProcessorRpc(uint64_t max_trace_bytes);
  ~TraceProcessorRpc();
  TraceProcessorRpc(const TraceProcessorRpc&) = delete;
  TraceProcessorRpc& operator=(const TraceProcessorRpc&) = delete;

  // Imports the trace file at `path` (the command line's TRACE).
  Status LoadTraceFile(const std::string& path);
  bool has_trace() const { return engine_ != nullptr; }
  // The engine queries run on (nullptr without a trace): the fuzzer bounds
  // SQLite's work on it.
  QueryEngine* engine() const { return engine_.get(); }

  // GET /status: a StatusResult.
  std::string GetStatus() const;
  // POST /parse: the next chunk of a trace being uploaded; the first chunk
  // after a finished upload (or a trace from the command line) starts a new
  // trace, as upstream's does. Returns an AppendTraceDataResult.
  std::string AppendTraceData(std::string_view chunk);
  // GET /notify_eof: the upload is complete; import it. An import that
  // fails is reported by every later query.
  void NotifyEndOfFile();
  // POST /query: QueryArgs in, QueryResult messages out (query_result_stream.h).
  void Query(std::string_view query_args, const QueryResultSink& sink);
  // GET /restore_initial_tables: drops what queries created (tables, views,
  // functions, macros, included modules), by importing the trace again.
  Status RestoreInitialTables();
  // POST /trace_summary: TraceSummaryArgs in, TraceSummaryResult out.
  std::string ComputeTraceSummary(std::string_view summary_args);
  // POST /compute_metric: Perfetto's v1 metrics; a ComputeMetricResult that
  // says to use trace summaries.
  std::string ComputeMetric(std::string_view metric_args) const;
  // GET /disable_and_read_metatrace: sluice keeps no metatrace; says so.
  std::string DisableAndReadMetatrace() const;

 private:
  // Why there is no engine to query (no trace yet, or its import failed).
  Status NoTraceError() const;

  const uint64_t max_trace_bytes_;
  std::unique_ptr<QueryEngine> engine_;
  std::string trace_name_;
  // Where the engine came from, for RestoreInitialTables: the command line's
  // file, or the upload's unlinked file (upload_fd_).
  std::string trace_path_;
  int upload_fd_ = -1;
  uint64_t upload_bytes_ = 0;
  bool uploading_ = false;
  Status import_status_ = Status::Ok();
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_RPC_TRACE_PROCESSOR_RPC_H_
