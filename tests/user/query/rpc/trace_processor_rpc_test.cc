#include "user/query/rpc/trace_processor_rpc.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perfetto/trace_processor/trace_processor.pb.h"
#include "shm/base/file_util.h"

namespace sluice {
namespace {

using perfetto::protos::QueryResult;

constexpr char kTrace[] = "tests/data/query/loss_kernel.pftrace";
constexpr uint64_t kNoLimit = uint64_t{1} << 40;

std::string QueryArgsFor(const std::string& sql) {
  perfetto::protos::QueryArgs args;
  args.set_sql_query(sql);
  return args.SerializeAsString();
}

QueryResult RunQuery(TraceProcessorRpc& rpc, const std::string& sql) {
  QueryResult merged;
  rpc.Query(QueryArgsFor(sql), [&](std::string_view bytes) {
    QueryResult message;
    EXPECT_TRUE(message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    merged.MergeFrom(message);
    return true;
  });
  return merged;
}

int64_t Count(TraceProcessorRpc& rpc, const std::string& sql) {
  QueryResult r = RunQuery(rpc, sql);
  EXPECT_EQ(r.error(), "") << sql;
  if (r.batch_size() == 0 || r.batch(0).varint_cells_size() == 0) return -1;
  return r.batch(0).varint_cells(0);
}

perfetto::protos::AppendTraceDataResult Append(TraceProcessorRpc& rpc, std::string_view chunk) {
  perfetto::protos::AppendTraceDataResult result;
  EXPECT_TRUE(result.ParseFromString(rpc.AppendTraceData(chunk)));
  return result;
}

// Uploads `bytes` in chunks of `chunk` bytes, as the Python client does.
void Upload(TraceProcessorRpc& rpc, const std::string& bytes, size_t chunk) {
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    EXPECT_EQ(Append(rpc, std::string_view(bytes).substr(at, chunk)).error(), "");
  }
  rpc.NotifyEndOfFile();
}

TEST(TraceProcessorRpcTest, StatusSaysTheApiVersionAndTheTrace) {
  TraceProcessorRpc rpc(kNoLimit);
  perfetto::protos::StatusResult status;
  ASSERT_TRUE(status.ParseFromString(rpc.GetStatus()));
  EXPECT_EQ(status.api_version(), 14);
  EXPECT_EQ(status.loaded_trace_name(), "");
  ASSERT_TRUE(rpc.LoadTraceFile(kTrace).ok());
  ASSERT_TRUE(status.ParseFromString(rpc.GetStatus()));
  EXPECT_EQ(status.loaded_trace_name(), "loss_kernel.pftrace");
}

TEST(TraceProcessorRpcTest, AnUploadInChunksGivesWhatTheFileGives) {
  StatusOr<std::string> bytes = ReadFile(kTrace);
  ASSERT_TRUE(bytes.ok());
  TraceProcessorRpc from_file(kNoLimit);
  ASSERT_TRUE(from_file.LoadTraceFile(kTrace).ok());
  TraceProcessorRpc uploaded(kNoLimit);
  Upload(uploaded, *bytes, 4099);  // Chunks that cut packets anywhere.
  const std::string sql = "select count(*) from sched";
  EXPECT_GT(Count(from_file, sql), 0);
  EXPECT_EQ(Count(uploaded, sql), Count(from_file, sql));
}

TEST(TraceProcessorRpcTest, AnUploadAfterATraceReplacesIt) {
  TraceProcessorRpc rpc(kNoLimit);
  ASSERT_TRUE(rpc.LoadTraceFile(kTrace).ok());
  StatusOr<std::string> other = ReadFile("tests/data/query/android_kernel.pftrace");
  ASSERT_TRUE(other.ok());
  Upload(rpc, *other, 1 << 20);
  EXPECT_EQ(Count(rpc, "select count(*) from sched"), 0);
}

TEST(TraceProcessorRpcTest, QueriesBeforeATraceSayWhatIsMissing) {
  TraceProcessorRpc rpc(kNoLimit);
  EXPECT_EQ(RunQuery(rpc, "select 1").error(),
            "no trace is loaded: give one on the command line or upload it with /parse");
  Append(rpc, "\x0a");
  EXPECT_EQ(RunQuery(rpc, "select 1").error(),
            "the trace is still being uploaded: send /notify_eof after the last /parse");
}

TEST(TraceProcessorRpcTest, AnUploadOverTheLimitFailsAndSaysWhichFlagRaisesIt) {
  TraceProcessorRpc rpc(uint64_t{1} << 20);
  std::string chunk(700 << 10, '\0');
  EXPECT_EQ(Append(rpc, chunk).error(), "");
  perfetto::protos::AppendTraceDataResult over = Append(rpc, chunk);
  EXPECT_EQ(over.error(),
            "the uploaded trace is larger than the server's limit of 1 MiB; restart it with a larger "
            "--http-max-trace-mb");
  rpc.NotifyEndOfFile();
  EXPECT_EQ(RunQuery(rpc, "select 1").error(), over.error());
}

TEST(TraceProcessorRpcTest, BytesThatAreNoTraceFailAtTheEndOfTheUpload) {
  TraceProcessorRpc rpc(kNoLimit);
  Upload(rpc, "this is not a trace", 7);
  QueryResult r = RunQuery(rpc, "select 1");
  EXPECT_EQ(r.error().rfind("the uploaded trace cannot be imported: ", 0), 0u) << r.error();
}

TEST(TraceProcessorRpcTest, MalformedArgumentsGetAnErrorReply) {
  TraceProcessorRpc rpc(kNoLimit);
  ASSERT_TRUE(rpc.LoadTraceFile(kTrace).ok());
  QueryResult r;
  rpc.Query("\xff\xff\xff", [&](std::string_view bytes) {
    EXPECT_TRUE(r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    return true;
  });
  EXPECT_EQ(r.error(), "the request is not a QueryArgs message");
  ASSERT_EQ(r.batch_size(), 1);
  EXPECT_TRUE(r.batch(0).is_last_batch());
  perfetto::protos::TraceSummaryResult summary;
  ASSERT_TRUE(summary.ParseFromString(rpc.ComputeTraceSummary("\xff\xff\xff")));
  EXPECT_NE(summary.error(), "");
}

TEST(TraceProcessorRpcTest, RestoreInitialTablesDropsWhatQueriesMade) {
  TraceProcessorRpc rpc(kNoLimit);
  ASSERT_TRUE(rpc.LoadTraceFile(kTrace).ok());
  EXPECT_EQ(RunQuery(rpc, "create table mine as select 1 as x").error(), "");
  EXPECT_EQ(RunQuery(rpc, "create perfetto function twice(x INT) returns INT as select $x * 2").error(), "");
  EXPECT_EQ(Count(rpc, "select count(*) from mine"), 1);
  ASSERT_TRUE(rpc.RestoreInitialTables().ok());
  EXPECT_EQ(RunQuery(rpc, "select * from mine").error(), "SQL error at line 1 column 1: no such table: mine");
  EXPECT_NE(RunQuery(rpc, "select twice(2)").error(), "");
  EXPECT_GT(Count(rpc, "select count(*) from sched"), 0);
}

TEST(TraceProcessorRpcTest, V1MetricsAndMetatracesSayWhatToUseInstead) {
  TraceProcessorRpc rpc(kNoLimit);
  perfetto::protos::ComputeMetricResult metric;
  ASSERT_TRUE(metric.ParseFromString(rpc.ComputeMetric("")));
  EXPECT_NE(metric.error().find("trace summaries"), std::string::npos);
  perfetto::protos::DisableAndReadMetatraceResult metatrace;
  ASSERT_TRUE(metatrace.ParseFromString(rpc.DisableAndReadMetatrace()));
  EXPECT_NE(metatrace.error(), "");
}

}  // namespace
}  // namespace sluice
