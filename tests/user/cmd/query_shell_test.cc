// Tests of user/cmd/query_shell.h over a stream (what a pipe gives it):
// dot-commands, statements over several lines, errors that print their line
// and let the shell go on, .format, .quit and the end of the input.
#include "user/cmd/query_shell.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"

namespace sluice {
namespace {

using testing::TestDatabase;

struct ShellRun {
  int exit_code = -1;
  std::string out, err;
};

class QueryShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.Exec(testing::kSampleTableSql);
    db_.Exec("CREATE VIEW small AS SELECT id FROM sample WHERE id < 3");
  }

  // Runs a shell reading `input`, with "sample" as the engine's one table.
  ShellRun Run(const std::string& input) {
    ShellRun run;
    char *out_data = nullptr, *err_data = nullptr;
    size_t out_size = 0, err_size = 0;
    FILE* in = fmemopen(const_cast<char*>(input.data()), input.size(), "r");
    FILE* out = open_memstream(&out_data, &out_size);
    FILE* err = open_memstream(&err_data, &err_size);
    EXPECT_TRUE(in && out && err);
    if (in && out && err) {
      std::unique_ptr<LineReader> reader = MakeStreamLineReader(in);
      QueryShell shell(db_.db(), {"sample"}, OutputFormat::kTable, out, err);
      run.exit_code = shell.Run(*reader);
    }
    for (FILE* f : {in, out, err}) {
      if (f) fclose(f);
    }
    run.out.assign(out_data ? out_data : "", out_size);
    run.err.assign(err_data ? err_data : "", err_size);
    free(out_data);
    free(err_data);
    return run;
  }

  TestDatabase db_;
};

TEST_F(QueryShellTest, TablesQueryBadQueryThenGoodQuery) {
  ShellRun run = Run(
      ".tables\n"
      "SELECT id, name FROM sample WHERE id BETWEEN 1 AND 2;\n"
      "SELECT nope FROM sample;\n"
      "SELECT 1 AS one;\n");
  EXPECT_EQ(run.out,
            "sample\n"
            "small\n"
            "id  name\n"
            "--  ------\n"
            " 1  plain\n"
            " 2  [NULL]\n"
            "one\n"
            "---\n"
            "  1\n");
  EXPECT_EQ(run.err, "sluice query: SQL error at line 3 column 8: no such column: nope\n");
  EXPECT_EQ(run.exit_code, 1);  // An entry failed: a script piping SQL in can tell.
}

TEST_F(QueryShellTest, StatementsSpanLinesAndErrorsCountInputLines) {
  ShellRun run = Run(
      "-- a comment, then a blank line\n"
      "\n"
      "SELECT 'a;b'\n"
      "  AS s\n"
      ";\n"
      "SELECT\n"
      "  1 AS a,\n"
      "  nope;\n");
  EXPECT_EQ(run.out, "s\n---\na;b\n");
  EXPECT_EQ(run.err, "sluice query: SQL error at line 8 column 3: no such column: nope\n");
}

TEST_F(QueryShellTest, SeveralStatementsOnALine) {
  ShellRun run = Run("SELECT 1 AS a; CREATE TABLE t(x); SELECT 2 AS b;\n");
  EXPECT_EQ(run.out, "a\n-\n1\n\nb\n-\n2\n");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(Run(".tables\n").out, "sample\nsmall\nt\n");  // What the session made, too.
}

TEST_F(QueryShellTest, Schema) {
  ShellRun run = Run(".schema sample\n.schema small;\n.schema\n.schema missing\n");
  EXPECT_EQ(run.out,
            "column  type\n"
            "------  -------\n"
            "id      INTEGER\n"
            "name    TEXT\n"
            "value   REAL\n"
            "column  type\n"
            "------  -------\n"
            "id      INTEGER\n"
            "sample(id INTEGER, name TEXT, value REAL)\n"
            "small(id INTEGER)\n");
  EXPECT_EQ(run.err, "sluice query: no table or view named 'missing' (.tables lists them)\n");
}

TEST_F(QueryShellTest, FormatSwitches) {
  ShellRun run = Run(
      ".format csv\n"
      "SELECT 1 AS a, NULL AS b;\n"
      ".format\n"
      ".format json\n"
      "SELECT 1 AS a, NULL AS b;\n"
      ".format xml\n"
      "SELECT 2 AS c;\n");
  EXPECT_EQ(run.out, "a,b\r\n1,\r\ncsv\n{\"a\":1,\"b\":null}\n{\"c\":2}\n");
  EXPECT_EQ(run.err, "sluice query: unknown format 'xml': use table, csv, tsv or json\n");
}

TEST_F(QueryShellTest, QuitStopsReading) {
  for (const char* quit : {".quit", ".exit"}) {
    ShellRun run = Run(std::string("SELECT 1 AS a;\n") + quit + "\nSELECT 2 AS b;\n");
    EXPECT_EQ(run.out, "a\n-\n1\n");
    EXPECT_EQ(run.exit_code, 0);
  }
}

TEST_F(QueryShellTest, EndOfInputRunsTheUnfinishedStatement) {
  ShellRun run = Run("SELECT 5 AS x");
  EXPECT_EQ(run.out, "x\n-\n5\n");
  EXPECT_EQ(run.exit_code, 0);
}

TEST_F(QueryShellTest, DotCommandsOnlyStartAnEntry) {
  // Inside a statement, ".5" is a number.
  ShellRun run = Run("SELECT\n.5 AS x;\n");
  EXPECT_EQ(run.out, "  x\n---\n0.5\n");
  EXPECT_EQ(run.err, "");
}

TEST_F(QueryShellTest, UnknownCommandAndHelp) {
  ShellRun run = Run(".frobnicate\n.help\n");
  EXPECT_EQ(run.err, "sluice query: unknown command '.frobnicate' (.help lists the commands)\n");
  EXPECT_NE(run.out.find(".schema [TABLE]"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(".format [FORMAT]"), std::string::npos) << run.out;
  EXPECT_EQ(run.exit_code, 1);
}

}  // namespace
}  // namespace sluice
