// Traces of several machines (a host and the machines relayed into it,
// docs/RELAY.md), built here, against upstream trace_processor_shell v58.2's
// answers for the same bytes (tests/data/query/multi_machine/, README.md
// there): the machine table, each machine's threads, processes and CPUs,
// the guests' timestamps put on the host's timeline through their
// RemoteClockSync packets (with drift), the per-machine loss stats, and a
// trace without machine_id whose answers do not change.
//
// The traces are built by multi_machine_test_util.h; the committed .pftrace files
// are their bytes (checked), so that upstream can be run on them again:
//   SLUICE_WRITE_MULTI_MACHINE_TRACES=1 build/sluice_tests --gtest_filter='MultiMachine*'
//   tests/data/query/multi_machine/refresh_expected.sh
// (the first rewrites the .pftrace files).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/user/query/multi_machine_test_util.h"
#include "tests/user/query/query_csv_test_util.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

using testing::HostOnlyTrace;
using testing::Rows;
using testing::TwoGuestsTrace;

std::string DataPath(const std::string& name) {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/query/multi_machine/" + name;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

struct BuiltTrace {
  const char* name;
  std::string (*build)();
};
const BuiltTrace kTraces[] = {{"two_guests", TwoGuestsTrace}, {"host_only", HostOnlyTrace}};

class MultiMachineReferenceTest : public ::testing::TestWithParam<BuiltTrace> {};

// The committed trace is what the builder makes: the expected answers are
// upstream's for these bytes.
TEST_P(MultiMachineReferenceTest, CommittedTraceIsTheBuiltOne) {
  const std::string bytes = GetParam().build();
  const std::string path = DataPath(std::string(GetParam().name) + ".pftrace");
  if (std::getenv("SLUICE_WRITE_MULTI_MACHINE_TRACES")) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  EXPECT_TRUE(ReadBytes(path) == bytes) << path << " is not what " << GetParam().name
                                        << "'s builder makes: rewrite it and refresh the expected answers";
}

TEST_P(MultiMachineReferenceTest, MatchesTraceProcessor) {
  auto engine = QueryEngine::OpenBytes(GetParam().build());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::string expected = ReadBytes(DataPath(std::string(GetParam().name) + ".csv"));
  ASSERT_FALSE(expected.empty());
  StatusOr<std::string> actual =
      testing::QueryToTraceProcessorCsv((*engine)->db(), ReadBytes(DataPath("queries.sql")));
  ASSERT_TRUE(actual.ok()) << actual.status().message();
  EXPECT_EQ(*actual, expected) << testing::DescribeCsvDifference(expected, *actual);
}

INSTANTIATE_TEST_SUITE_P(Traces, MultiMachineReferenceTest, ::testing::ValuesIn(kTraces),
                         [](const ::testing::TestParamInfo<BuiltTrace>& info) { return std::string(info.param.name); });

// sluice's own rows, which upstream does not have: the relay's figures, the
// events a guest's kernel ring buffer overwrote (its FtraceStats), and the
// clock sync's offset and error bound, per machine.
TEST(MultiMachineStatsTest, RelayAndClockRowsPerMachine) {
  auto engine = QueryEngine::OpenBytes(TwoGuestsTrace());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ(Rows((*engine)->db(),
                 "select name, idx, severity, value, machine_id from stats "
                 "where name like 'relay_%' or name like 'remote_clock_%' order by machine_id, name"),
            (std::vector<std::string>{
                "relay_bytes_dropped|1|info|12288|1", "relay_chunks_dropped|1|data_loss|3|1",
                "relay_chunks_lost_in_transit|1|data_loss|1|1", "relay_connects|1|info|2|1",
                "relay_disconnects|1|info|1|1", "relay_machine_ftrace_overrun|1|data_loss|6|1",
                "relay_packets_dropped|1|info|27|1",
                "remote_clock_error_ns|1|info|152|1", "remote_clock_max_error_ns|1|info|152|1",
                "remote_clock_offset_ns|1|info|-399998885|1", "remote_clock_syncs|1|info|2|1",
                "relay_bytes_dropped|7|info|0|2", "relay_chunks_dropped|7|data_loss|0|2",
                "relay_chunks_lost_in_transit|7|data_loss|0|2", "relay_connects|7|info|2|2",
                "relay_disconnects|7|info|1|2", "relay_packets_dropped|7|info|0|2",
                "remote_clock_error_ns|7|info|52|2", "remote_clock_max_error_ns|7|info|52|2",
                "remote_clock_offset_ns|7|info|3999000007|2", "remote_clock_syncs|7|info|1|2"}));
}

}  // namespace
}  // namespace sluice
