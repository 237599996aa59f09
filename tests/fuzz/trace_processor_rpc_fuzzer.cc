// libFuzzer target: the request bodies `sluice query --httpd` decodes
// (user/query/rpc/trace_processor_rpc.h), in any order: status, trace chunks
// and end of file, QueryArgs, restore, TraceSummaryArgs (binary and text
// specs, so the structured-query generator too) and ComputeMetricArgs.
// HTTP itself is cpp-httplib's. Nothing may crash, hang or leak; every
// reply must be a message of its type.
//
// Input: records of [method byte][length, 2 bytes little-endian][body].
//
//   make fuzz    (or: build/fuzz/trace_processor_rpc_fuzzer -max_total_time=60)
// Seeds: tests/fuzz/corpus/trace_processor_rpc_fuzzer/.
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "perfetto/trace_processor/trace_processor.pb.h"
#include "tests/fuzz/tiny_trace.h"
#include "user/query/engine/query_engine.h"
#include "user/query/rpc/trace_processor_rpc.h"

namespace {

// SQLite's work per engine is bounded, so a query without end stops.
void BoundWork(sluice::TraceProcessorRpc& rpc, int* steps) {
  if (!rpc.engine()) return;
  *steps = 0;
  sqlite3_progress_handler(rpc.engine()->db(), 1000,
                           [](void* n) { return ++*static_cast<int*>(n) > 2000 ? 1 : 0; }, steps);
}

template <typename Message>
void MustParse(const std::string& bytes) {
  Message message;
  if (!message.ParseFromString(bytes)) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Uploads go to unlinked files in TMPDIR; a small limit keeps them small.
  sluice::TraceProcessorRpc rpc(1 << 20);
  static const std::string trace = sluice::fuzzing::TinyTrace();
  rpc.AppendTraceData(trace);
  rpc.NotifyEndOfFile();
  int steps = 0;
  BoundWork(rpc, &steps);
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (input.size() >= 3) {
    const uint8_t method = static_cast<uint8_t>(input[0]);
    const size_t length = static_cast<uint8_t>(input[1]) | (static_cast<size_t>(static_cast<uint8_t>(input[2])) << 8);
    input.remove_prefix(3);
    std::string_view body = input.substr(0, length);
    input.remove_prefix(body.size());
    switch (method % 7) {
      case 0:
        MustParse<perfetto::protos::StatusResult>(rpc.GetStatus());
        break;
      case 1:
        MustParse<perfetto::protos::AppendTraceDataResult>(rpc.AppendTraceData(body));
        break;
      case 2:
        rpc.NotifyEndOfFile();
        BoundWork(rpc, &steps);
        break;
      case 3:
        rpc.Query(body, [](std::string_view reply) {
          MustParse<perfetto::protos::QueryResult>(std::string(reply));
          return true;
        });
        break;
      case 4:
        (void)rpc.RestoreInitialTables();
        BoundWork(rpc, &steps);
        break;
      case 5:
        MustParse<perfetto::protos::TraceSummaryResult>(rpc.ComputeTraceSummary(body));
        break;
      default:
        MustParse<perfetto::protos::ComputeMetricResult>(rpc.ComputeMetric(body));
        break;
    }
  }
  return 0;
}
