// Tests of `sluice query` over many traces (user/cmd/multi_trace_query.h):
// the runner in-process (its threads are what `make SANITIZE=thread` checks)
// and the built binary as a user runs it, on the committed traces of
// tests/data/query/. The many-trace result is the one-trace results put one
// after the other under a trace column, in the order named whatever order the
// traces finish in; a trace that fails is named on stderr and the others
// answer; a directory; columns that differ; the usage errors.
#include "user/cmd/multi_trace_query.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "shm/base/string_util.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"
#include "user/query/engine/sql_statements.h"
#include "user/trace/trace_file_reader.h"

namespace sluice {
namespace {

using Result = testing::CommandResult;

// Per-process CPU time, in an order that does not depend on the scan.
constexpr char kCpuPerProcess[] =
    "select p.pid, p.name, sum(s.dur) as cpu_ns, count(*) as slices "
    "from sched s join thread t using(utid) left join process p using(upid) "
    "group by p.upid order by cpu_ns desc, p.pid";

// Recorded sched traces of different kinds and a hand-written atrace one
// (no sched rows: an empty result of its own).
const std::vector<std::string> kTraceNames = {"default", "nocompact", "bpf", "procstats", "atrace", "loss_central"};

std::vector<std::string> TracePaths() {
  std::vector<std::string> paths;
  for (const std::string& name : kTraceNames) paths.push_back(testing::QueryTracePath(name));
  return paths;
}

struct Output {
  int exit_code = -1;
  std::string out, err;
};

// RunMultiTraceQuery in this process, its output and errors captured.
Output RunInProcess(const MultiTraceQueryOptions& options) {
  Output output;
  char *out_data = nullptr, *err_data = nullptr;
  size_t out_size = 0, err_size = 0;
  FILE* out = open_memstream(&out_data, &out_size);
  FILE* err = open_memstream(&err_data, &err_size);
  output.exit_code = RunMultiTraceQuery(options, out, err);
  fclose(out);
  fclose(err);
  output.out.assign(out_data, out_size);
  output.err.assign(err_data, err_size);
  free(out_data);
  free(err_data);
  return output;
}

MultiTraceQueryOptions Options(std::vector<std::string> traces, std::string script, OutputFormat format) {
  MultiTraceQueryOptions options;
  options.traces = std::move(traces);
  options.script = std::move(script);
  options.format = format;
  return options;
}

// What one trace's last statement prints, as cells: the expected rows.
struct OneResult {
  std::vector<std::string> columns;
  std::vector<std::vector<ResultCell>> rows;
};
OneResult QueryOne(const std::string& path, const std::string& sql) {
  OneResult result;
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(path);
  EXPECT_TRUE(engine.ok()) << path << ": " << engine.status().message();
  if (!engine.ok()) return result;
  Status ran = RunSqlScript((*engine)->db(), sql, [&](const SqlStatement& statement) {
    if (!statement.last) return StepToEnd(statement.stmt);
    const int columns = sqlite3_column_count(statement.stmt);
    for (int c = 0; c < columns; c++) result.columns.push_back(sqlite3_column_name(statement.stmt, c));
    while (sqlite3_step(statement.stmt) == SQLITE_ROW) {
      std::vector<ResultCell>& row = result.rows.emplace_back(static_cast<size_t>(columns));
      for (int c = 0; c < columns; c++) ReadResultCell(statement.stmt, c, &row[static_cast<size_t>(c)]);
    }
    return Status::Ok();
  }, 1, (*engine)->dialect());
  EXPECT_TRUE(ran.ok()) << ran.message();
  return result;
}

// The per-trace results one after the other under a trace column, written by
// the one-result writer.
std::string Concatenated(const std::vector<std::string>& traces, const std::string& sql, OutputFormat format) {
  std::vector<std::string> columns = {"trace"};
  std::vector<std::vector<ResultCell>> rows;
  for (const std::string& trace : traces) {
    OneResult one = QueryOne(trace, sql);
    if (columns.size() == 1) columns.insert(columns.end(), one.columns.begin(), one.columns.end());
    for (std::vector<ResultCell>& row : one.rows) {
      row.insert(row.begin(), ResultCell{SQLITE_TEXT, trace});
      rows.push_back(std::move(row));
    }
  }
  return testing::CaptureOutput([&](FILE* out) { WriteResultRows(columns, rows, format, out); });
}

TEST(MultiTraceQueryTest, ResultIsTheConcatenationOfPerTraceResultsInEveryFormat) {
  for (OutputFormat format : {OutputFormat::kTable, OutputFormat::kCsv, OutputFormat::kTsv, OutputFormat::kJson}) {
    Output many = RunInProcess(Options(TracePaths(), kCpuPerProcess, format));
    EXPECT_EQ(many.exit_code, 0) << many.err;
    EXPECT_EQ(many.err, "");
    EXPECT_EQ(many.out, Concatenated(TracePaths(), kCpuPerProcess, format)) << OutputFormatName(format);
  }
  Output json = RunInProcess(Options(TracePaths(), kCpuPerProcess, OutputFormat::kJson));
  EXPECT_TRUE(json.out.starts_with("{\"trace\":\"" + TracePaths()[0] + "\",\"pid\":")) << json.out;
}

// Waits (up to 30 s: only a broken runner takes that long) until `done`.
template <typename Condition>
bool WaitFor(Condition done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(MultiTraceQueryTest, OrderIsTheNamedOneWhateverFinishesFirst) {
  // All at once, each trace finishing only after the one named after it:
  // they finish last to first.
  const std::vector<std::string> traces = TracePaths();
  std::vector<std::atomic<bool>> finished(traces.size());
  MultiTraceQueryOptions options = Options(traces, kCpuPerProcess, OutputFormat::kCsv);
  options.jobs = static_cast<int>(traces.size());
  options.memory_bytes = uint64_t{1} << 40;
  options.answer = [&](size_t index, const std::string& path) {
    EXPECT_TRUE(WaitFor([&] { return index + 1 == traces.size() || finished[index + 1].load(); }));
    TraceAnswer answer = AnswerTrace(path, kCpuPerProcess, false);
    finished[index] = true;
    return answer;
  };
  Output reversed = RunInProcess(options);
  EXPECT_EQ(reversed.exit_code, 0) << reversed.err;
  EXPECT_EQ(reversed.out, Concatenated(traces, kCpuPerProcess, OutputFormat::kCsv));

  // The same with one at a time, and with the default count.
  MultiTraceQueryOptions serial = Options(traces, kCpuPerProcess, OutputFormat::kCsv);
  serial.jobs = 1;
  EXPECT_EQ(RunInProcess(serial).out, reversed.out);
  EXPECT_EQ(RunInProcess(Options(traces, kCpuPerProcess, OutputFormat::kCsv)).out, reversed.out);

  // A trace named twice answers twice.
  std::vector<std::string> twice = {traces[0], traces[1], traces[0]};
  EXPECT_EQ(RunInProcess(Options(twice, kCpuPerProcess, OutputFormat::kCsv)).out,
            Concatenated(twice, kCpuPerProcess, OutputFormat::kCsv));
}

TEST(MultiTraceQueryTest, AllPrintsEachResultAcrossTheTraces) {
  const std::vector<std::string> traces = {testing::QueryTracePath("default"), testing::QueryTracePath("atrace")};
  const std::string script =
      "create table t as select count(*) as n from sched;\n"
      "select n from t;\n"
      "select count(*) as threads from thread;\n";
  MultiTraceQueryOptions options = Options(traces, script, OutputFormat::kCsv);
  options.all = true;
  Output all = RunInProcess(options);
  EXPECT_EQ(all.exit_code, 0) << all.err;
  const std::string first = Concatenated(traces, "select count(*) as n from sched", OutputFormat::kCsv);
  const std::string second = Concatenated(traces, "select count(*) as threads from thread", OutputFormat::kCsv);
  EXPECT_EQ(all.out, first + "\r\n" + second);

  // Without --all: the last one's.
  EXPECT_EQ(RunInProcess(Options(traces, script, OutputFormat::kCsv)).out, second);
  // A last statement without result columns prints nothing, as for one trace.
  EXPECT_EQ(RunInProcess(Options(traces, "create table u(a)", OutputFormat::kCsv)).out, "");
}

TEST(MultiTraceQueryTest, AFailedTraceIsNamedAndTheOthersAnswer) {
  const std::string dir = testing::MakeTempDir("sluice_multi_query_");
  ASSERT_FALSE(dir.empty());
  const std::string corrupt = dir + "/corrupt.pftrace";
  ASSERT_TRUE(WriteFileAtomically(corrupt, "this is not a trace\n", 0644).ok());
  const std::string missing = dir + "/missing.pftrace";
  const std::string good0 = testing::QueryTracePath("default"), good1 = testing::QueryTracePath("bpf");
  Output output = RunInProcess(Options({good0, corrupt, good1, missing}, kCpuPerProcess, OutputFormat::kCsv));
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_EQ(output.out, Concatenated({good0, good1}, kCpuPerProcess, OutputFormat::kCsv));
  const std::vector<std::string> lines = [&] {
    std::vector<std::string> v;
    ForEachLine(output.err, [&](std::string_view line) { return v.emplace_back(line), true; });
    return v;
  }();
  ASSERT_EQ(lines.size(), 2u) << output.err;
  EXPECT_EQ(lines[0],
            "sluice query: " + corrupt + ": byte 0 is not a Trace.packet record (tag 0x74): not a Perfetto trace, or corrupt");
  EXPECT_TRUE(lines[1].starts_with("sluice query: " + missing + ": cannot open " + missing + ": No such file"))
      << lines[1];

  // Every trace failed: no rows, every one named.
  Output none = RunInProcess(Options({corrupt, missing}, kCpuPerProcess, OutputFormat::kTable));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.out, "");
  EXPECT_NE(none.err.find(corrupt), std::string::npos);
  EXPECT_NE(none.err.find(missing), std::string::npos);
  testing::RemoveTempDir(dir);
}

TEST(MultiTraceQueryTest, ATruncatedTraceAnswersUpToTheCut) {
  // As for one trace: the import keeps what precedes the cut (and says so in
  // stats), so the trace answers.
  const std::string dir = testing::MakeTempDir("sluice_multi_query_");
  ASSERT_FALSE(dir.empty());
  StatusOr<std::string> bytes = ReadFile(testing::QueryTracePath("nocompact"));
  ASSERT_TRUE(bytes.ok());
  const std::string cut = dir + "/cut.pftrace";
  ASSERT_TRUE(WriteFileAtomically(cut, bytes->substr(0, bytes->size() / 2 + 7), 0644).ok());
  const std::vector<std::string> traces = {testing::QueryTracePath("default"), cut};
  Output output = RunInProcess(Options(traces, kCpuPerProcess, OutputFormat::kCsv));
  EXPECT_EQ(output.exit_code, 0) << output.err;
  EXPECT_EQ(output.out, Concatenated(traces, kCpuPerProcess, OutputFormat::kCsv));
  testing::RemoveTempDir(dir);
}

TEST(MultiTraceQueryTest, AStatementThatFailsOnOneTraceOnly) {
  // json('{') fails at run time, and runs only where sched has rows.
  const std::string sql = "select case when (select count(*) from sched) > 0 then json('{') else 1 end as x";
  const std::string atrace = testing::QueryTracePath("atrace"), sched = testing::QueryTracePath("default");
  Output output = RunInProcess(Options({atrace, sched}, sql, OutputFormat::kCsv));
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_EQ(output.out, "trace,x\r\n" + atrace + ",1\r\n");
  EXPECT_EQ(output.err, "sluice query: " + sched + ": SQL error at line 1 column 1: malformed JSON\n");
}

TEST(MultiTraceQueryTest, ATraceWithOtherColumnsIsThatTracesError) {
  // The same script cannot give other columns on another trace: a test
  // answer runs another one on trace 1.
  const std::vector<std::string> traces = TracePaths();
  MultiTraceQueryOptions options = Options(traces, kCpuPerProcess, OutputFormat::kCsv);
  options.answer = [&](size_t index, const std::string& path) {
    return AnswerTrace(path, index == 1 ? "select 1 as other" : kCpuPerProcess, false);
  };
  Output output = RunInProcess(options);
  EXPECT_EQ(output.exit_code, 1);
  std::vector<std::string> others = traces;
  others.erase(others.begin() + 1);
  EXPECT_EQ(output.out, Concatenated(others, kCpuPerProcess, OutputFormat::kCsv));
  EXPECT_EQ(output.err, "sluice query: " + traces[1] +
                            ": its result has the columns (other), not (pid, name, cpu_ns, slices) as the traces "
                            "before it\n");

  // The first good trace sets the columns: the first trace failed here.
  options.answer = [&](size_t index, const std::string& path) {
    return AnswerTrace(index == 0 ? "/nonexistent" : path, index == 2 ? "select 2 as two" : "select 1 as one", false);
  };
  output = RunInProcess(options);
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_TRUE(output.out.starts_with("trace,one\r\n" + traces[1] + ",1\r\n" + traces[3] + ",1\r\n")) << output.out;
  EXPECT_NE(output.err.find(traces[2] + ": its result has the columns (two), not (one)"), std::string::npos)
      << output.err;

  // With --all, each result is compared: the second differs here.
  MultiTraceQueryOptions all = Options({traces[0], traces[1]}, "", OutputFormat::kCsv);
  all.all = true;
  all.answer = [&](size_t index, const std::string& path) {
    return AnswerTrace(path, index == 0 ? "select 1 as a; select 2 as b" : "select 1 as a; select 2 as c", true);
  };
  output = RunInProcess(all);
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_EQ(output.out, "trace,a\r\n" + traces[0] + ",1\r\n\r\ntrace,b\r\n" + traces[0] + ",2\r\n");
  EXPECT_EQ(output.err, "sluice query: " + traces[1] + ": its result has the columns (c), not (b) as the traces "
                                                       "before it (result 2 of 2)\n");
}

TEST(MultiTraceQueryTest, MemoryBoundRunsFewerAtOnceAndSaysSoOnce) {
  const std::vector<std::string> traces = TracePaths();
  // Counts the traces running at once; each waits until `together` run, so
  // that the most is reached if allowed. With `hold_first`, the first trace
  // waits until the runner said it waits for memory (stderr is a file here).
  std::atomic<int> running{0}, most{0}, together{0};
  std::atomic<bool> hold_first{false};
  const std::string dir = testing::MakeTempDir("sluice_multi_query_");
  ASSERT_FALSE(dir.empty());
  const std::string err_path = dir + "/err";
  auto counting = [&](size_t index, const std::string& path) {
    const int now = ++running;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    EXPECT_TRUE(WaitFor([&] { return most.load() >= together.load(); }));
    if (index == 0 && hold_first) {
      EXPECT_TRUE(WaitFor([&] { return ReadFile(err_path).value_or("").find("waiting for memory") != std::string::npos; }));
    }
    TraceAnswer answer = AnswerTrace(path, kCpuPerProcess, false);
    --running;
    return answer;
  };
  const std::string expected = Concatenated(traces, kCpuPerProcess, OutputFormat::kCsv);

  MultiTraceQueryOptions roomy = Options(traces, kCpuPerProcess, OutputFormat::kCsv);
  roomy.jobs = 3;
  roomy.memory_bytes = uint64_t{1} << 40;
  roomy.answer = counting;
  together = 3;
  Output output = RunInProcess(roomy);
  EXPECT_EQ(output.out, expected);
  EXPECT_EQ(output.err, "");
  EXPECT_EQ(most.load(), 3);

  // Room for one import at a time: every trace still answers, one by one.
  most = 0;
  together = 0;
  hold_first = true;
  MultiTraceQueryOptions tight = roomy;
  tight.memory_bytes = EstimateImportBytes(traces[0]) + 1;
  FILE* err = fopen(err_path.c_str(), "w");
  ASSERT_NE(err, nullptr);
  setvbuf(err, nullptr, _IONBF, 0);
  output.out = testing::CaptureOutput([&](FILE* out) { output.exit_code = RunMultiTraceQuery(tight, out, err); });
  fclose(err);
  output.err = ReadFile(err_path).value_or("");
  EXPECT_EQ(output.exit_code, 0);
  EXPECT_EQ(output.out, expected);
  EXPECT_EQ(most.load(), 1);
  EXPECT_TRUE(output.err.starts_with("sluice query: waiting for memory: " + traces[1] + " needs about ")) << output.err;
  EXPECT_EQ(std::count(output.err.begin(), output.err.end(), '\n'), 1) << output.err;
  testing::RemoveTempDir(dir);
}

TEST(MultiTraceQueryTest, ImportEstimateAndBudget) {
  // Plain records by the file's size; compressed_packets ones at a higher rate.
  const std::string dir = testing::MakeTempDir("sluice_multi_query_");
  ASSERT_FALSE(dir.empty());
  StatusOr<std::string> plain = ReadFile(testing::QueryTracePath("nocompact"));
  ASSERT_TRUE(plain.ok());
  StatusOr<std::string> compressed = CompressPacketRecords(*plain);
  ASSERT_TRUE(compressed.ok()) << compressed.status().message();
  ASSERT_TRUE(WriteFileAtomically(dir + "/plain", *plain, 0644).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/compressed", *compressed, 0644).ok());
  const uint64_t fixed = EstimateImportBytes(dir + "/none");
  const uint64_t plain_need = EstimateImportBytes(dir + "/plain");
  const uint64_t compressed_need = EstimateImportBytes(dir + "/compressed");
  EXPECT_GT(fixed, 0u);
  EXPECT_GE(plain_need - fixed, 16 * plain->size());
  EXPECT_LE(plain_need - fixed, 32 * plain->size());
  // Per byte of file, a compressed trace needs more.
  EXPECT_GT((compressed_need - fixed) / compressed->size(), (plain_need - fixed) / plain->size());
  testing::RemoveTempDir(dir);

  EXPECT_EQ(ParseMemAvailable("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   1000 kB\n"),
            1000u * 1024);
  EXPECT_EQ(ParseMemAvailable("MemTotal: 5 kB\n"), 0u);
  EXPECT_GT(AvailableMemoryBytes(), 0u);
  EXPECT_GE(UsableCpus(), 1);
}

// ---- the binary ------------------------------------------------------------

class MultiTraceQueryCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_multi_query_cmd_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }

  Result Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {sluice_, "query"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunToCompletion(argv, dir_);
  }

  // A copy of tests/data/query/<name>.pftrace at `path`.
  void CopyTrace(const std::string& name, const std::string& path) {
    StatusOr<std::string> bytes = ReadFile(testing::QueryTracePath(name));
    ASSERT_TRUE(bytes.ok());
    ASSERT_TRUE(WriteFileAtomically(path, *bytes, 0644).ok());
  }

  std::string sluice_, dir_;
};

// Each line of a one-trace csv result after the header, `trace,` before it.
std::string WithTraceColumn(const std::string& trace, const std::string& csv, bool header) {
  std::string out;
  bool first = true;
  for (std::string_view rest = csv; !rest.empty();) {
    const size_t end = rest.find("\r\n") + 2;
    if (!first || header) out += std::string(first ? "trace" : trace) + "," + std::string(rest.substr(0, end));
    first = false;
    rest.remove_prefix(end);
  }
  return out;
}

TEST_F(MultiTraceQueryCommandTest, SeveralTracesGiveOneResultWithATraceColumn) {
  std::string expected;
  std::vector<std::string> args = TracePaths();
  for (size_t i = 0; i < args.size(); i++) {
    Result one = Run({args[i], "-q", kCpuPerProcess, "--format", "csv"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_FALSE(one.out.starts_with("trace,")) << "one trace keeps its output: no trace column";
    expected += WithTraceColumn(args[i], one.out, i == 0);
  }
  args.insert(args.end(), {"-q", kCpuPerProcess, "--format", "csv"});
  Result many = Run(args);
  EXPECT_EQ(many.exit_code, 0) << many.err;
  EXPECT_EQ(many.err, "");
  EXPECT_EQ(many.out, expected);

  // -f and --timing.
  const std::string sql = dir_ + "/cpu.sql";
  ASSERT_TRUE(WriteFileAtomically(sql, std::string("-- per process\n") + kCpuPerProcess + ";\n", 0644).ok());
  args.resize(TracePaths().size());
  args.insert(args.end(), {"-f", sql, "--format", "csv", "--timing", "-j", "2"});
  Result from_file = Run(args);
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(from_file.out, expected);
  EXPECT_NE(from_file.err.find("sluice query: " + TracePaths()[0] + ": imported in "), std::string::npos)
      << from_file.err;
  EXPECT_NE(from_file.err.find("traces in "), std::string::npos) << from_file.err;
}

TEST_F(MultiTraceQueryCommandTest, ADirectoryStandsForItsTraceFilesByName) {
  const std::string traces = dir_ + "/traces";
  ASSERT_EQ(mkdir(traces.c_str(), 0755), 0);
  CopyTrace("default", traces + "/b.pftrace");
  CopyTrace("atrace", traces + "/a,with comma.pftrace");
  CopyTrace("bpf", traces + "/c");
  CopyTrace("nocompact", traces + "/.hidden.pftrace");
  CopyTrace("default", traces + "/b.000002.pftrace.recording");  // --rotate's file being written.
  ASSERT_TRUE(WriteFileAtomically(traces + "/README.md", "# traces\n", 0644).ok());
  ASSERT_TRUE(WriteFileAtomically(traces + "/empty.pftrace", "", 0644).ok());
  ASSERT_EQ(mkdir((traces + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink((traces + "/b.pftrace").c_str(), (traces + "/d-link.pftrace").c_str()), 0);

  const std::string sql = "select count(*) as threads from thread";
  std::string expected = "trace,threads\r\n";
  for (const char* name : {"a,with comma.pftrace", "b.pftrace", "c", "d-link.pftrace"}) {
    Result one = Run({traces + "/" + name, "-q", sql, "--format", "csv"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const std::string trace = traces + "/" + name;
    expected += (trace.find(',') != std::string::npos ? "\"" + trace + "\"" : trace) + "," +
                one.out.substr(one.out.find("\r\n") + 2);
  }
  Result dir = Run({traces, "-q", sql, "--format", "csv"});
  EXPECT_EQ(dir.exit_code, 0) << dir.err;
  EXPECT_EQ(dir.out, expected);
  EXPECT_EQ(dir.err, "sluice query: " + traces +
                         ": skipped 4 entries that are not trace files: README.md (not a Perfetto trace), "
                         "b.000002.pftrace.recording (still being recorded), empty.pftrace (empty), sub/ (a "
                         "directory)\n");

  // "DIR/" names its traces DIR/NAME too; a directory mixes with files.
  Result slash = Run({traces + "/", testing::QueryTracePath("default"), "-q", sql, "--format", "tsv"});
  EXPECT_EQ(slash.exit_code, 0) << slash.err;
  EXPECT_TRUE(slash.out.starts_with("trace\tthreads\n" + traces + "/a,with comma.pftrace\t")) << slash.out;
  EXPECT_NE(slash.out.find("\n" + testing::QueryTracePath("default") + "\t"), std::string::npos) << slash.out;

  // One directory holding one trace: still the trace column.
  const std::string single = dir_ + "/single";
  ASSERT_EQ(mkdir(single.c_str(), 0755), 0);
  CopyTrace("default", single + "/only.pftrace");
  Result one = Run({single, "-q", "select 1 as one", "--format", "csv"});
  EXPECT_EQ(one.out, "trace,one\r\n" + single + "/only.pftrace,1\r\n");

  // A directory without traces is a bad input.
  const std::string none = dir_ + "/none";
  ASSERT_EQ(mkdir(none.c_str(), 0755), 0);
  ASSERT_TRUE(WriteFileAtomically(none + "/notes.txt", "x", 0644).ok());
  Result empty = Run({none, "-q", sql});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_EQ(empty.out, "");
  EXPECT_EQ(empty.err, "sluice query: " + none +
                           " holds no trace file (notes.txt (not a Perfetto trace)): name a directory of Perfetto "
                           "traces, or trace files\n");
}

TEST_F(MultiTraceQueryCommandTest, AFailedTraceSetsTheExitStatus) {
  const std::string corrupt = dir_ + "/corrupt.pftrace";
  ASSERT_TRUE(WriteFileAtomically(corrupt, std::string("\x0a\x05zz", 4), 0644).ok());  // Cut in its first record.
  const std::string garbage = dir_ + "/garbage.pftrace";
  ASSERT_TRUE(WriteFileAtomically(garbage, "\x01\x02\x03", 0644).ok());
  const std::string good = testing::QueryTracePath("default");
  Result result = Run({garbage, good, corrupt, "-q", "select count(*) as n from sched", "--format", "json"});
  EXPECT_EQ(result.exit_code, 1);
  // The cut-off one imports as an empty trace, as it would alone.
  EXPECT_TRUE(result.out.starts_with("{\"trace\":\"" + good + "\",\"n\":")) << result.out;
  EXPECT_TRUE(result.out.ends_with("{\"trace\":\"" + corrupt + "\",\"n\":0}\n")) << result.out;
  EXPECT_EQ(result.err, "sluice query: " + garbage +
                            ": byte 0 is not a Trace.packet record (tag 0x01): not a Perfetto trace, or corrupt\n");
}

TEST_F(MultiTraceQueryCommandTest, OneTraceFormsAreUsageErrorsWithSeveral) {
  const std::string a = testing::QueryTracePath("default"), b = testing::QueryTracePath("atrace");
  const std::string several = "takes one TRACE, not several or a directory";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{a, b, "--export", dir_ + "/x.sqlite"}, "--export " + several + ": -q or -f query several"},
      {{a, b, "--summary", "--summary-spec", "x.textproto"}, "--summary " + several + ": -q or -f query several"},
      {{a, b}, "the shell (without -q or -f) " + several + ": -q or -f query several"},
      {{"tests/data/query", "--export", dir_ + "/x.sqlite"}, "--export " + several + ": -q or -f query several"},
      {{"--httpd", a, b}, "--httpd " + several},
      {{"--httpd", "tests/data/query"}, "--httpd " + several},
      {{a, "select 1", "-q", "select 2"}, "no trace file 'select 1': quote SQL given with -q"},
      {{a, b, "-q", "select 1", "-j", "0"}, "--jobs takes a whole number from 1 to 1024 (got '0')"},
  };
  for (const auto& [args, message] : cases) {
    Result result = Run(args);
    EXPECT_EQ(result.exit_code, 2) << Join(args, " ");
    EXPECT_EQ(result.err, "sluice query: " + message + " (see sluice query --help)\n") << Join(args, " ");
    EXPECT_EQ(result.out, "") << Join(args, " ");
  }
  Result help = Run({"--help"});
  EXPECT_NE(help.out.find("sluice query TRACE... | DIR..."), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("-j, --jobs N"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace sluice
