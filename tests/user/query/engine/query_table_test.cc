// The SQLite virtual table module over a real (small) import: plans the
// module offers (lookups, ordered scans) must give the same rows SQLite's own
// evaluation would, and the ordered plan must spare SQLite its sorter.
#include "user/query/engine/query_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perfetto/trace/trace_packet.pb.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

using testing::Rows;

std::unique_ptr<QueryEngine> EngineWithEvents() {
  testing::TraceBuilder trace;
  perfetto::protos::TracePacket p;
  auto* bundle = p.mutable_ftrace_events();
  bundle->set_cpu(0);
  // cpu_idle on cpus 2, 0, 1, 0, 2 at ts 10..50; print on pid 7 at 60.
  uint32_t cpus[] = {2, 0, 1, 0, 2};
  for (int i = 0; i < 5; ++i) {
    auto* e = bundle->add_event();
    e->set_timestamp(static_cast<uint64_t>(10 * (i + 1)));
    e->mutable_cpu_idle()->set_state(static_cast<uint32_t>(i));
    e->mutable_cpu_idle()->set_cpu_id(cpus[i]);
  }
  auto* print = bundle->add_event();
  print->set_timestamp(60);
  print->set_pid(7);
  print->mutable_print()->set_buf("x");
  trace.Add(p);
  auto engine = QueryEngine::OpenBytes(trace.bytes);
  EXPECT_TRUE(engine.ok());
  return std::move(engine).value();
}

TEST(QueryTableTest, LookupOnIdMatchesScan) {
  auto engine = EngineWithEvents();
  EXPECT_EQ(Rows(engine->db(), "select ts from ftrace_event where id = 2"), std::vector<std::string>{"30"});
  EXPECT_EQ(Rows(engine->db(), "select ts from ftrace_event where id = 2.0"), std::vector<std::string>{"30"});
  EXPECT_EQ(Rows(engine->db(), "select ts from ftrace_event where id = '2'"), std::vector<std::string>{"30"});
  EXPECT_TRUE(Rows(engine->db(), "select ts from ftrace_event where id = 99").empty());
  EXPECT_TRUE(Rows(engine->db(), "select ts from ftrace_event where id = -1").empty());
  EXPECT_TRUE(Rows(engine->db(), "select ts from ftrace_event where id = null").empty());
  EXPECT_TRUE(Rows(engine->db(), "select ts from ftrace_event where id = 2.5").empty());
}

TEST(QueryTableTest, ArgsLookupBySetGivesTheSetsRows) {
  auto engine = EngineWithEvents();
  EXPECT_EQ(Rows(engine->db(), "select key, display_value from ftrace_event e join args a using(arg_set_id) "
                               "where e.ts = 60"),
            std::vector<std::string>{"buf|x"});
  EXPECT_EQ(Rows(engine->db(), "select count(*) from args where arg_set_id = 100000"), std::vector<std::string>{"0"});
}

TEST(QueryTableTest, OrderedScansAreStableAndSpareTheSorter) {
  auto engine = EngineWithEvents();
  sqlite3* db = engine->db();
  EXPECT_EQ(Rows(db, "select group_concat(ts) from (select ts from counter c join cpu_counter_track t "
                     "on c.track_id = t.id order by t.cpu)"),
            std::vector<std::string>{"20,40,30,10,50"});
  EXPECT_EQ(Rows(db, "select group_concat(ts) from (select ts from ftrace_event order by ts desc)"),
            std::vector<std::string>{"60,50,40,30,20,10"});
  EXPECT_EQ(Rows(db, "select name, count(*) from ftrace_event group by name"),
            (std::vector<std::string>{"cpu_idle|5", "print|1"}));
  EXPECT_EQ(Rows(db, "select utid, count(*) from ftrace_event group by utid order by utid"),
            (std::vector<std::string>{"0|5", "1|1"}));
  // The ordered plan is the module's: no temp b-tree for the GROUP BY.
  for (const std::string& plan : Rows(db, "explain query plan select utid, count(*) from ftrace_event group by utid"))
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
}

// ORDER BY a, b where rows already ascend by b (ts: stored by time) is the
// stable permutation by a: SPAN_JOIN reads sched that way. A b that does
// not ascend (or a descending key) leaves the sort to SQLite.
TEST(QueryTableTest, OrderByAColumnThenTheRowOrderSparesTheSorter) {
  auto engine = EngineWithEvents();
  sqlite3* db = engine->db();
  EXPECT_EQ(Rows(db, "select group_concat(cpu || ':' || ts) from (select cpu, ts from cpu_counter_track t "
                     "join counter c on c.track_id = t.id order by t.cpu)"),
            std::vector<std::string>{"0:20,0:40,1:30,2:10,2:50"});
  const char* kByUtidThenTs = "select utid, ts from ftrace_event order by utid, ts";
  EXPECT_EQ(Rows(db, kByUtidThenTs), (std::vector<std::string>{"0|10", "0|20", "0|30", "0|40", "0|50", "1|60"}));
  for (const std::string& plan : Rows(db, std::string("explain query plan ") + kByUtidThenTs))
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
  // ts does not ascend with id descending, nor does utid in row order
  // here: SQLite sorts, and the rows are still right.
  EXPECT_EQ(Rows(db, "select utid, ts from ftrace_event order by utid, ts desc"),
            (std::vector<std::string>{"0|50", "0|40", "0|30", "0|20", "0|10", "1|60"}));
  EXPECT_EQ(Rows(db, "select ts, utid from ftrace_event order by ts desc, utid"),
            (std::vector<std::string>{"60|1", "50|0", "40|0", "30|0", "20|0", "10|0"}));
  bool sorted_by_sqlite = false;
  for (const std::string& plan : Rows(db, "explain query plan select utid, ts from ftrace_event order by utid, ts desc"))
    sorted_by_sqlite = sorted_by_sqlite || plan.find("TEMP B-TREE") != std::string::npos;
  EXPECT_TRUE(sorted_by_sqlite);
}

TEST(QueryTableTest, PushedDownEqualityAndInMatchSqlitesOwnComparison) {
  auto engine = EngineWithEvents();
  sqlite3* db = engine->db();
  auto count = [db](const std::string& where) {
    return Rows(db, "select count(*) from ftrace_event where " + where)[0];
  };
  EXPECT_EQ(count("name = 'print'"), "1");
  EXPECT_EQ(count("name = 'cpu_idle'"), "5");
  EXPECT_EQ(count("name = 'no such event'"), "0");
  EXPECT_EQ(count("name in ('print', 'cpu_idle', 'nope')"), "6");
  EXPECT_EQ(count("name = 'PRINT' collate nocase"), "1");
  EXPECT_EQ(count("name = null"), "0");
  EXPECT_EQ(count("utid = 1"), "1");
  EXPECT_EQ(count("utid = 1.0"), "1");
  EXPECT_EQ(count("utid = '1'"), "1");
  EXPECT_EQ(count("utid = 1.5"), "0");
  EXPECT_EQ(count("utid in (0, 1)"), "6");
  EXPECT_EQ(count("utid = 0 and name = 'cpu_idle'"), "5");
  EXPECT_EQ(count("arg_set_id = null"), "0");
  // Combined with an ordered plan and with a lookup.
  EXPECT_EQ(Rows(db, "select utid, count(*) from ftrace_event where name = 'cpu_idle' group by utid"),
            std::vector<std::string>{"0|5"});
  EXPECT_EQ(Rows(db, "select ts from ftrace_event where id = 5 and name = 'print'"), std::vector<std::string>{"60"});
  EXPECT_TRUE(Rows(db, "select ts from ftrace_event where id = 5 and name = 'cpu_idle'").empty());
  // The same answers as SQLite's own evaluation on a copy of the table.
  Rows(db, "create temp table copy as select * from ftrace_event");
  for (std::string where : {"name = 'print'", "utid in (0, 1)", "utid = '1'", "name in ('print')"})
    EXPECT_EQ(count(where), Rows(db, "select count(*) from copy where " + where)[0]) << where;
}

TEST(QueryTableTest, IdRangesReadOnlyTheirRowsAndMatchSqlitesOwnComparison) {
  auto engine = EngineWithEvents();
  sqlite3* db = engine->db();
  Rows(db, "create temp table copy as select * from ftrace_event");
  for (std::string where :
       {"id between 2 and 4", "id > 3", "id >= 3", "id < 2", "id <= 2", "id > 3.5", "id >= 3.5", "id < 2.5",
        "id <= -1", "id > 99", "id > -5 and id < 99", "id > 4 and id < 2", "id > null", "id < null",
        "id > 'abc'", "id < 'abc'", "id >= '3'", "id between 1 and 4 and name = 'cpu_idle'",
        "id > 1 and id > 3 and id < 5"}) {
    EXPECT_EQ(Rows(db, "select group_concat(id) from (select id from ftrace_event where " + where + ")"),
              Rows(db, "select group_concat(id) from (select id from copy where " + where + ")"))
        << where;
  }
  // A range, ordered by id: no sorter, no full scan.
  for (const std::string& plan : Rows(db, "explain query plan select ts from ftrace_event where id > 2 order by id"))
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
  EXPECT_EQ(Rows(db, "select group_concat(id) from (select id from ftrace_event where id > 2 order by id desc)"),
            std::vector<std::string>{"5,4,3"});
}

TEST(QueryTableTest, ArgsFilterByKeyValueTypeAndString) {
  auto engine = EngineWithEvents();
  sqlite3* db = engine->db();
  EXPECT_EQ(Rows(db, "select count(*) from args where key = 'state'"), std::vector<std::string>{"5"});
  EXPECT_EQ(Rows(db, "select count(*) from args where key in ('buf', 'cpu_id')"), std::vector<std::string>{"6"});
  EXPECT_EQ(Rows(db, "select count(*) from args where value_type = 'string'"), std::vector<std::string>{"1"});
  EXPECT_EQ(Rows(db, "select count(*) from args where string_value = 'x'"), std::vector<std::string>{"1"});
  EXPECT_EQ(Rows(db, "select count(*) from args where flat_key = 'buf'"), std::vector<std::string>{"1"});
  EXPECT_EQ(Rows(db, "select count(*) from args where display_value = 'x'"), std::vector<std::string>{"1"});
  EXPECT_EQ(Rows(db, "select count(*) from args where key = 'nope'"), std::vector<std::string>{"0"});
}

TEST(QueryTableTest, TextOrderIsSqlitesNotTheInterningOrder) {
  auto engine = EngineWithEvents();
  // "print" was interned after "cpu_idle"... and after many arg keys; the
  // text order must come from SQLite's sorter, not string ids.
  EXPECT_EQ(Rows(engine->db(), "select distinct name from ftrace_event order by name desc"),
            (std::vector<std::string>{"print", "cpu_idle"}));
  EXPECT_EQ(Rows(engine->db(), "select name, count(*) from ftrace_event group by name order by name"),
            (std::vector<std::string>{"cpu_idle|5", "print|1"}));
  EXPECT_EQ(Rows(engine->db(), "select name, count(*) from ftrace_event group by 1 order by 1 desc"),
            (std::vector<std::string>{"print|1", "cpu_idle|5"}));
  // The event args, and the cpu dimension of each cpu_idle counter track.
  EXPECT_EQ(Rows(engine->db(), "select group_concat(key) from (select key from args order by key)"),
            std::vector<std::string>{"buf,cpu,cpu,cpu,cpu_id,cpu_id,cpu_id,cpu_id,cpu_id,state,state,state,state,state"});
  EXPECT_EQ(Rows(engine->db(), "select display_value from args order by display_value limit 3"),
            (std::vector<std::string>{"0", "0", "0"}));
}

}  // namespace
}  // namespace sluice
