// End to end: small traces (tests/data/query/*.textproto) imported by
// QueryEngine, queried with tests/data/query/tracker_tables.sql, must print
// exactly what upstream trace_processor_shell v58.2 printed for the same
// trace (tests/data/query/*.tp.csv, made with
//   protoc -Iprotos --encode=perfetto.protos.Trace protos/perfetto/trace/trace.proto
//     < X.textproto > X.pftrace
//   trace_processor_shell -q tests/data/query/tracker_tables.sql X.pftrace > X.tp.csv).
// utids and upids included: the importer feeds the trackers in Perfetto's
// order, so even the ids match.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <google/protobuf/text_format.h>

#include "perfetto/trace/trace.pb.h"
#include "tests/user/query/query_csv_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

std::string DataPath(const std::string& name) {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/query/" + name;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class QueryEngineSchedTest : public ::testing::TestWithParam<const char*> {};

TEST_P(QueryEngineSchedTest, TablesMatchTraceProcessor) {
  const std::string name = GetParam();
  perfetto::protos::Trace trace;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadText(DataPath(name + ".textproto")), &trace))
      << DataPath(name + ".textproto");
  auto engine = QueryEngine::OpenBytes(trace.SerializeAsString());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  std::string expected = ReadText(DataPath(name + ".tp.csv"));
  ASSERT_FALSE(expected.empty());
  StatusOr<std::string> actual =
      testing::QueryToTraceProcessorCsv((*engine)->db(), ReadText(DataPath("tracker_tables.sql")));
  ASSERT_TRUE(actual.ok()) << actual.status().message();
  EXPECT_EQ(*actual, expected) << testing::DescribeCsvDifference(expected, *actual);
}

// sched_full: full-format switches, wakings, task_newtask / task_rename /
// sched_process_free, a tid reused, a mismatched switch. sched_compact: the
// compact_sched encoding. process: process_tree packets written after the
// ftrace events they follow (sorted in by timestamp), pending parent and
// thread links, a changed ppid. sched_no_uname: the 4.4 prev_state layout.
// soft_drop: a CPU whose stream starts late (previous_bundle_end_timestamp):
// earlier events on the other CPUs only reach ftrace_event.
INSTANTIATE_TEST_SUITE_P(Traces, QueryEngineSchedTest,
                         ::testing::Values("sched_full", "sched_compact", "process", "sched_no_uname",
                                           "soft_drop"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace sluice
