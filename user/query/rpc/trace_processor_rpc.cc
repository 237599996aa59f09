#include "user/query/rpc/trace_processor_rpc.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>
#include <vector>

#include "perfetto/trace_processor/trace_processor.pb.h"
#include "shm/base/errno_message.h"
#include "user/query/engine/query_engine.h"
#include "user/query/summary/trace_summary.h"
#include "user/query/summary/trace_summary_text.h"

namespace sluice {

namespace {

// The RPC version trace_processor v58 speaks (upstream's
// TRACE_PROCESSOR_CURRENT_API_VERSION); clients refuse a server older than
// they expect.
constexpr int kApiVersion = 14;

// Where uploads go: an unlinked file on disk, not memory, so a large trace
// costs the server no more RSS than `sluice query` reading it from a file.
std::string UploadDirectory() {
  const char* tmpdir = getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/var/tmp";
}

std::string FdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

}  // namespace

TraceProcessorRpc::TraceProcessorRpc(uint64_t max_trace_bytes) : max_trace_bytes_(max_trace_bytes) {}

TraceProcessorRpc::~TraceProcessorRpc() {
  engine_.reset();
  if (upload_fd_ >= 0) close(upload_fd_);
}

Status TraceProcessorRpc::LoadTraceFile(const std::string& path) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(path);
  if (!engine.ok()) return engine.status();
  engine_ = std::move(*engine);
  trace_path_ = path;
  size_t slash = path.rfind('/');
  trace_name_ = slash == std::string::npos ? path : path.substr(slash + 1);
  import_status_ = Status::Ok();
  return Status::Ok();
}

std::string TraceProcessorRpc::GetStatus() const {
  perfetto::protos::StatusResult status;
  status.set_loaded_trace_name(engine_ ? trace_name_ : "");
  status.set_human_readable_version("sluice 0.1 (trace_processor RPC v" + std::to_string(kApiVersion) + ")");
  status.set_api_version(kApiVersion);
  return status.SerializeAsString();
}

std::string TraceProcessorRpc::AppendTraceData(std::string_view chunk) {
  perfetto::protos::AppendTraceDataResult result;
  if (!uploading_) {
    // A new trace replaces the one loaded.
    engine_.reset();
    if (upload_fd_ >= 0) close(upload_fd_);
    upload_fd_ = open(UploadDirectory().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    upload_bytes_ = 0;
    uploading_ = true;
    trace_name_ = "uploaded trace";
    trace_path_.clear();
    import_status_ = upload_fd_ >= 0
                         ? Status::Ok()
                         : Status::Error(WithErrno("cannot keep the uploaded trace in " + UploadDirectory(), errno) +
                                         "; set TMPDIR to a writable directory on a disk");
  }
  if (import_status_.ok() && upload_bytes_ + chunk.size() > max_trace_bytes_) {
    import_status_ = Status::Error("the uploaded trace is larger than the server's limit of " +
                                   std::to_string(max_trace_bytes_ >> 20) +
                                   " MiB; restart it with a larger --http-max-trace-mb");
  }
  if (import_status_.ok()) {
    for (size_t written = 0; written < chunk.size();) {
      ssize_t n = write(upload_fd_, chunk.data() + written, chunk.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        import_status_ = Status::Error(WithErrno("cannot keep the uploaded trace in " + UploadDirectory(), errno));
        break;
      }
      written += static_cast<size_t>(n);
    }
    upload_bytes_ += chunk.size();
  }
  result.set_total_bytes_parsed(static_cast<int64_t>(upload_bytes_));
  if (!import_status_.ok()) result.set_error(import_status_.message());
  return result.SerializeAsString();
}

void TraceProcessorRpc::NotifyEndOfFile() {
  if (!uploading_) return;  // Nothing was uploaded: the loaded trace stays.
  uploading_ = false;
  if (!import_status_.ok()) return;
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(FdPath(upload_fd_));
  if (!engine.ok()) {
    import_status_ = Status::Error("the uploaded trace cannot be imported: " + engine.status().message());
    return;
  }
  engine_ = std::move(*engine);
}

Status TraceProcessorRpc::NoTraceError() const {
  if (!import_status_.ok()) return import_status_;
  if (uploading_) return Status::Error("the trace is still being uploaded: send /notify_eof after the last /parse");
  return Status::Error("no trace is loaded: give one on the command line or upload it with /parse");
}

void TraceProcessorRpc::Query(std::string_view query_args, const QueryResultSink& sink) {
  perfetto::protos::QueryArgs args;
  Status status = Status::Ok();
  if (!args.ParseFromArray(query_args.data(), static_cast<int>(query_args.size())))
    status = Status::Error("the request is not a QueryArgs message");
  else if (!engine_)
    status = NoTraceError();
  if (status.ok()) return StreamQueryResult(engine_->db(), engine_->dialect(), args.sql_query(), sink);
  perfetto::protos::QueryResult result;
  result.set_error(status.message());
  result.add_batch()->set_is_last_batch(true);
  sink(result.SerializeAsString());
}

Status TraceProcessorRpc::RestoreInitialTables() {
  if (!engine_) return NoTraceError();
  engine_.reset();
  const std::string path = trace_path_.empty() ? FdPath(upload_fd_) : trace_path_;
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(path);
  if (!engine.ok()) {
    import_status_ = Status::Error("cannot import the trace again: " + engine.status().message());
    return import_status_;
  }
  engine_ = std::move(*engine);
  return Status::Ok();
}

std::string TraceProcessorRpc::ComputeTraceSummary(std::string_view summary_args) {
  perfetto::protos::TraceSummaryResult result;
  perfetto::protos::TraceSummaryArgs args;
  auto fail = [&](const std::string& message) {
    result.set_error(message);
    return result.SerializeAsString();
  };
  if (!args.ParseFromArray(summary_args.data(), static_cast<int>(summary_args.size())))
    return fail("the request is not a TraceSummaryArgs message");
  if (!engine_) return fail(NoTraceError().message());
  std::vector<perfetto::protos::TraceSummarySpec> specs(args.proto_specs().begin(), args.proto_specs().end());
  for (int i = 0; i < args.textproto_specs_size(); ++i) {
    perfetto::protos::TraceSummarySpec spec;
    if (Status parsed = ParseTraceSummarySpecText(args.textproto_specs(i), &spec); !parsed.ok())
      return fail("text spec " + std::to_string(i + 1) + ": " + parsed.message());
    specs.push_back(std::move(spec));
  }
  TraceSummaryComputation what;
  const auto& computation = args.computation_spec();
  what.all_metrics = computation.run_all_metrics();
  what.metric_ids.assign(computation.metric_ids().begin(), computation.metric_ids().end());
  what.metadata_query_id = computation.metadata_query_id();
  StatusOr<perfetto::protos::TraceSummary> summary =
      sluice::ComputeTraceSummary(engine_->db(), engine_->dialect(), specs, what);
  if (!summary.ok()) return fail(summary.status().message());
  if (args.output_format() == perfetto::protos::TraceSummaryArgs::TEXTPROTO)
    result.set_textproto_summary(TraceSummaryText(*summary));
  else
    result.set_proto_summary(summary->SerializeAsString());
  return result.SerializeAsString();
}

std::string TraceProcessorRpc::ComputeMetric(std::string_view) const {
  perfetto::protos::ComputeMetricResult result;
  result.set_error(
      "sluice has no v1 metrics (TraceMetrics); use trace summaries: trace_summary() in Python, "
      "POST /trace_summary, or sluice query --summary");
  return result.SerializeAsString();
}

std::string TraceProcessorRpc::DisableAndReadMetatrace() const {
  perfetto::protos::DisableAndReadMetatraceResult result;
  result.set_error("sluice keeps no metatrace; sluice query --timing times the import and each statement");
  return result.SerializeAsString();
}

}  // namespace sluice
