// ReportToJson (user/report/report_json.h): valid JSON (read back with
// libprotobuf's JSON parser) in both row forms, with every kind of value and
// hostile text.
#include "user/report/report_json.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace sluice {
namespace {

Report SampleReport() {
  Report report;
  report.trace_path = "/tmp/a \"quoted\" path.pftrace";
  ReportSection section;
  section.name = "cpu_by_thread";
  section.title = "CPU time by thread";
  section.description = "The threads that ran longest.";
  section.columns = {"tid", "thread", "cpu_s", "note"};
  section.rows.push_back({int64_t{42}, std::string("</script><b>x</b>\n\"\\"), 1.5, std::monostate()});
  section.rows.push_back(
      {std::numeric_limits<int64_t>::min(), std::string("bad \xff utf8"), -0.5, std::nan("")});
  report.sections.push_back(section);
  ReportSection empty;
  empty.name = "losses";
  empty.title = "Losses";
  empty.columns = {"name"};
  report.sections.push_back(empty);
  return report;
}

google::protobuf::Struct Parse(const std::string& json) {
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return parsed;
}

TEST(ReportJsonTest, ObjectsForScripts) {
  const std::string json = ReportToJson(SampleReport(), ReportJsonRows::kObjects);
  const google::protobuf::Struct parsed = Parse(json);
  EXPECT_EQ(parsed.fields().at("trace").string_value(), "/tmp/a \"quoted\" path.pftrace");
  const auto& sections = parsed.fields().at("sections").struct_value().fields();
  ASSERT_EQ(sections.size(), 2u);
  const auto& cpu = sections.at("cpu_by_thread").struct_value().fields();
  EXPECT_EQ(cpu.at("title").string_value(), "CPU time by thread");
  const auto& rows = cpu.at("rows").list_value().values();
  ASSERT_EQ(rows.size(), 2);
  const auto& first = rows[0].struct_value().fields();
  EXPECT_EQ(first.at("tid").number_value(), 42);
  EXPECT_EQ(first.at("thread").string_value(), "</script><b>x</b>\n\"\\");
  EXPECT_EQ(first.at("cpu_s").number_value(), 1.5);
  EXPECT_EQ(first.at("note").kind_case(), google::protobuf::Value::kNullValue);
  const auto& second = rows[1].struct_value().fields();
  EXPECT_EQ(second.at("thread").string_value(), "bad \xef\xbf\xbd utf8");
  EXPECT_EQ(second.at("note").kind_case(), google::protobuf::Value::kNullValue);  // NaN
  EXPECT_EQ(sections.at("losses").struct_value().fields().at("rows").list_value().values_size(), 0);
  EXPECT_NE(json.find("\"tid\":-9223372036854775808"), std::string::npos);
}

TEST(ReportJsonTest, ArraysForThePage) {
  const std::string json = ReportToJson(SampleReport(), ReportJsonRows::kArrays);
  Parse(json);
  EXPECT_NE(json.find("\"columns\":[\"tid\",\"thread\",\"cpu_s\",\"note\"]"), std::string::npos);
  EXPECT_NE(json.find("[42,\"</script><b>x</b>\\n\\\"\\\\\",1.5,null]"), std::string::npos) << json;
}

TEST(ReportJsonTest, InfinityAsSqliteWritesIt) {
  // 9e999, as SQLite's JSON functions and `sluice query --format json` write
  // it: JavaScript and Python read it as infinity (strict parsers refuse
  // it; JSON has no infinity).
  Report report = SampleReport();
  report.sections[0].rows[1][2] = std::numeric_limits<double>::infinity();
  report.sections[0].rows[0][2] = -std::numeric_limits<double>::infinity();
  const std::string json = ReportToJson(report, ReportJsonRows::kObjects);
  EXPECT_NE(json.find("\"cpu_s\":9e999"), std::string::npos);
  EXPECT_NE(json.find("\"cpu_s\":-9e999"), std::string::npos);
}

TEST(ReportJsonTest, EmptyReport) {
  EXPECT_EQ(ReportToJson(Report(), ReportJsonRows::kObjects), "{\"trace\":\"\",\"sections\":{}}\n");
}

}  // namespace
}  // namespace sluice
