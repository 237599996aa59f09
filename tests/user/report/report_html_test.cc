// RenderReportHtml (user/report/report_html.h): the page as a string
// (data embedded and escaped, nothing fetched from the network, the size
// bound), and the page as a browser draws it: Debian's headless Chromium
// loads it and dumps the DOM its script built.
#include "user/report/report_html.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/multi_machine_test_util.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"
#include "user/report/report_builder.h"
#include "user/report/report_json.h"

namespace sluice {
namespace {

// Thread and slice names are chosen by whoever ran on the traced machine.
constexpr char kHostileThread[] = "</script><script>document.body.dataset.pwned=1</script>";
constexpr char kHostileSlice[] = "<!--<script>document.body.dataset.pwned=2</script>-->";
constexpr char kHostileProcess[] = "<img src=x onerror=\"document.body.dataset.pwned=3\">";

ReportSection Section(const std::string& name, std::vector<std::string> columns) {
  ReportSection section;
  section.name = name;
  section.title = "Title of " + name;
  section.description = "What " + name + " holds.";
  section.columns = std::move(columns);
  return section;
}

// Every section of user/report/sql/ with its columns and no rows.
Report EmptyReport() {
  Report report;
  report.trace_path = "/var/tmp/traces/boot.pftrace";
  report.sections = {
      Section("overview", {"duration_s", "start_ts", "end_ts", "size_bytes", "kernel", "machine", "cpus",
                           "processes", "threads", "sched_slices", "slices", "counter_values"}),
      Section("losses", {"name", "idx", "severity", "value", "fix"}),
      Section("cpu_by_process", {"pid", "process", "threads", "cpu_s", "cpu_pct"}),
      Section("cpu_by_thread", {"tid", "thread", "pid", "process", "runs", "cpu_s", "cpu_pct"}),
      Section("cpu_utilization", {"cpu", "switches", "busy_s", "busy_pct"}),
      Section("sched_latency",
              {"tid", "thread", "process", "waits", "waited_s", "p50_us", "p90_us", "p99_us", "max_us"}),
      Section("longest_slices", {"ts", "dur_ms", "name", "depth", "id", "owner"}),
      Section("slice_names", {"name", "count", "total_ms", "avg_ms", "max_ms"}),
      Section("counters", {"name", "type", "owner", "values_seen", "min", "max", "avg"}),
      Section("html_timeline", {"cpu", "bucket", "top_upid", "top_run_ns", "run_ns"}),
      Section("html_timeline_scale", {"start_ts", "bucket_ns", "buckets", "cpus"}),
      Section("html_processes", {"upid", "pid", "name", "cpu_ns"}),
      Section("html_latency_histogram", {"bucket", "lower_ns", "waits"}),
      Section("html_window", {"start_ts", "end_ts", "slices", "runs"}),
      Section("html_window_slices", {"ts", "dur", "depth", "name", "track_id", "id", "kind", "owner", "track"}),
      Section("html_window_runs", {"cpu", "ts", "dur", "tid", "thread", "upid"}),
  };
  return report;
}

ReportSection& Get(Report& report, const std::string& name) {
  for (ReportSection& section : report.sections)
    if (section.name == name) return section;
  ADD_FAILURE() << "no section " << name;
  static ReportSection none;
  return none;
}

constexpr int64_t kStart = 35949967593338;       // ns, as in a recorded trace.
constexpr int64_t kSpan = 3'000'000'000;         // 3 s.
constexpr int64_t kBuckets = 500;

// What a trace of 3 s on 2 CPUs gives: a few processes (one named by an
// attacker), a timeline, a latency histogram, slices on three threads
// nested three deep (one still open), CPU runs, a loss, counters.
// `cpus`, `slices` and `runs` scale it up for the full-size test.
Report RealisticReport(int64_t cpus = 2, int64_t slices = 300, int64_t runs = 200, int64_t buckets = kBuckets) {
  Report report = EmptyReport();
  const int64_t bucket_ns = kSpan / buckets;
  Get(report, "overview").rows = {{3.0, kStart, kStart + kSpan, int64_t{107733}, std::string("6.18.44"),
                                   std::string("x86_64"), cpus, int64_t{4}, int64_t{9}, runs, slices,
                                   int64_t{120}}};
  Get(report, "losses").rows = {{std::string("ftrace_cpu_overrun_end"), int64_t{1}, std::string("data_loss"),
                                 int64_t{42}, std::string("raise buffer_size_kb")}};
  const std::vector<std::string> names = {"sluiced", "render", kHostileProcess, "kworker"};
  for (int64_t upid = 1; upid <= 4; ++upid) {
    Get(report, "html_processes").rows.push_back(
        {upid, upid * 100, names[static_cast<size_t>(upid - 1)], (5 - upid) * 10'000'000});
  }
  Get(report, "cpu_by_process").rows = {{int64_t{100}, names[0], int64_t{3}, 0.04, 0.67}};
  Get(report, "cpu_by_thread").rows = {
      {int64_t{101}, std::string(kHostileThread), int64_t{100}, names[0], int64_t{12}, 0.03, 0.5},
      {int64_t{201}, std::string("render"), int64_t{200}, names[1], int64_t{40}, 0.01, 0.17}};
  for (int64_t cpu = 0; cpu < cpus; ++cpu) {
    Get(report, "cpu_utilization").rows.push_back({cpu, int64_t{400}, 0.5, 16.7});
    for (int64_t bucket = 0; bucket < buckets; bucket += (cpus > 2 ? 1 : 3)) {
      int64_t run_ns = (bucket * 7919 + cpu * 104729) % bucket_ns;
      Get(report, "html_timeline").rows.push_back({cpu, bucket, 1 + (bucket + cpu) % 4, run_ns / 2, run_ns});
    }
  }
  Get(report, "html_timeline_scale").rows = {{kStart, bucket_ns, buckets, cpus}};
  Get(report, "sched_latency").rows = {{int64_t{101}, std::string(kHostileThread), names[0], int64_t{50},
                                        0.001, 12.5, 40.0, 80.1, std::monostate{}}};
  for (int64_t bucket = 10; bucket < 18; ++bucket)
    Get(report, "html_latency_histogram").rows.push_back({bucket, int64_t{1} << bucket, (bucket * 37) % 200 + 1});
  Get(report, "longest_slices").rows = {{kStart + 1000, 0.15, std::string(kHostileSlice), int64_t{0},
                                         int64_t{101}, std::string(kHostileThread)}};
  Get(report, "slice_names").rows = {{std::string("draw"), int64_t{120}, 0.73, 0.006, 0.009}};
  Get(report, "counters").rows = {{std::string("queue"), std::string("atrace_counter"), std::string("pid 100"),
                                   int64_t{40}, 1.0, 40.0, 20.5}};
  // Windows: the whole trace; it has more slices than the page shows.
  Get(report, "html_window").rows = {{kStart, kStart + kSpan, slices * 10, runs}};
  auto& slice_rows = Get(report, "html_window_slices").rows;
  for (int64_t i = 0; i < slices; ++i) {
    const int64_t thread = i % 3, depth = (i / 3) % 3;
    const int64_t ts = kStart + (i / 9) * (kSpan / (slices / 9 + 1)) + depth * 1000;
    const int64_t dur = i == slices - 1 ? -1 : kSpan / (slices / 9 + 1) / (depth + 1) - 5000;
    std::string name = i == 4 ? std::string(kHostileSlice) : "frame " + std::to_string(i);
    slice_rows.push_back({ts, dur, depth, name, thread + 1, int64_t{101} + thread, std::string("thread"),
                          thread == 0 ? std::string(kHostileThread) : std::string("render"), std::string("")});
  }
  auto& run_rows = Get(report, "html_window_runs").rows;
  for (int64_t i = 0; i < runs; ++i) {
    run_rows.push_back({i % cpus, kStart + i * (kSpan / runs), kSpan / runs / 2, int64_t{101} + i % 3,
                        i % 3 == 0 ? std::string(kHostileThread) : std::string("render"), 1 + i % 4});
  }
  return report;
}

// The text of the page's data element: from its start tag to the first
// "</script" after it, which must be its own end tag.
std::string DataElementText(const std::string& page, const std::string& id = "sluice-report-data") {
  const std::string start = "<script type=\"application/json\" id=\"" + id + "\">";
  size_t begin = page.find(start);
  if (begin == std::string::npos) return "<no data element>";
  begin += start.size();
  return page.substr(begin, page.find("</script", begin) - begin);
}

// A page or dumped DOM without the text of the data elements, which holds the
// hostile names as JSON: what is left is what the script built.
std::string WithoutData(std::string dom) {
  for (const char* id : {"sluice-report-data", "sluice-report-trimmed"}) {
    const std::string start = "<script type=\"application/json\" id=\"" + std::string(id) + "\">";
    size_t begin = dom.find(start);
    if (begin == std::string::npos) continue;
    begin += start.size();
    dom.erase(begin, dom.find("</script", begin) - begin);
  }
  return dom;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Undoes EscapeJsonForScriptElement's two escapes; the result must be the
// JSON that ReportToJson wrote.
std::string Unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] != '<') continue;
    if (text.substr(i + 1, 2) == "\\/") {
      i += 1;  // Drop the backslash; the '/' comes next.
    } else if (text.substr(i + 1, 6) == "\\u0021") {
      out += '!';
      i += 6;
    }
  }
  return out;
}

// Runs one SQL expression over `json` (as ?1) in SQLite, whose JSON
// functions check the document: json_valid, json_extract.
std::string SqliteJson(const std::string& expression, const std::string& json) {
  sqlite3* db = nullptr;
  sqlite3_open(":memory:", &db);
  sqlite3_stmt* stmt = nullptr;
  std::string result = "<error>";
  if (sqlite3_prepare_v2(db, ("SELECT " + expression).c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(stmt, 1, json.data(), static_cast<int>(json.size()), SQLITE_STATIC);
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      result = text ? reinterpret_cast<const char*>(text) : "<null>";
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return result;
}

TEST(ReportHtmlTest, EscapesWhatWouldEndTheScriptElement) {
  EXPECT_EQ(EscapeJsonForScriptElement(R"("</script>")"), R"("<\/script>")");
  EXPECT_EQ(EscapeJsonForScriptElement(R"("</SCRIPT")"), R"("<\/SCRIPT")");
  EXPECT_EQ(EscapeJsonForScriptElement(R"("<!--<script>")"), R"("<\u0021--<script>")");
  EXPECT_EQ(EscapeJsonForScriptElement(R"("\\</")"), R"("\\<\/")");  // A backslash before stays its own.
  EXPECT_EQ(EscapeJsonForScriptElement(R"("<!-", "<b", "<")"), R"("<!-", "<b", "<")");
  EXPECT_EQ(EscapeJsonForScriptElement(""), "");
}

TEST(ReportHtmlTest, EmbedsTheReportAsEscapedJson) {
  const Report report = RealisticReport();
  const std::string page = RenderReportHtml(report);
  const std::string data = DataElementText(page);

  // The hostile names are inside the data element, escaped, and nowhere
  // else in the page.
  EXPECT_NE(data.find(R"(<\/script><script>document.body.dataset.pwned=1<\/script>)"), std::string::npos);
  EXPECT_NE(data.find(R"(<\u0021--<script>document.body.dataset.pwned=2<\/script>-->)"), std::string::npos);
  EXPECT_EQ(page.find(kHostileThread), std::string::npos);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  // One end tag per script element: the error handler, the data, the trim
  // notes and the page's script. None from the data, where "<script" stays
  // as it is (harmless without "<!--" before it).
  std::string lower = page;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_EQ(Count(lower, "</script"), 4u);
  EXPECT_EQ(Count(WithoutData(lower), "<script"), 4u);
  EXPECT_EQ(Count(page, "id=\"sluice-report-data\""), 1u);

  // Unescaped, it is the report's JSON exactly, and valid.
  const std::string json = Unescape(data);
  EXPECT_EQ(json, "\n" + ReportToJson(report, ReportJsonRows::kArrays));
  EXPECT_EQ(SqliteJson("json_valid(?1)", json), "1");
  EXPECT_EQ(SqliteJson("json_extract(?1, '$.sections.cpu_by_thread.rows[0][1]')", json), kHostileThread);
  EXPECT_EQ(SqliteJson("json_extract(?1, '$.trace')", json), report.trace_path);
  EXPECT_EQ(DataElementText(page, "sluice-report-trimmed"), "{}");
}

// The first place in `page` that would load something from elsewhere: an
// attribute (src, href, action, poster, srcset, data) or a CSS url() whose
// value, past blanks and a quote, is "//..." or "scheme://...", or an
// @import; "" if none. (A scan, not std::regex: GCC 12's <regex> does not
// build under -fsanitize=address -Werror.)
std::string FindRemoteReference(std::string page) {
  for (char& c : page) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (const size_t at = page.find("@import"); at != std::string::npos) return page.substr(at, 60);
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  for (std::string_view opener : {"src", "href", "action", "poster", "srcset", "data", "url"}) {
    const char opening = opener == "url" ? '(' : '=';
    for (size_t at = page.find(opener); at != std::string::npos; at = page.find(opener, at + 1)) {
      size_t i = at + opener.size();
      while (i < page.size() && blank(page[i])) ++i;
      if (i >= page.size() || page[i] != opening) continue;
      ++i;
      while (i < page.size() && blank(page[i])) ++i;
      if (i < page.size() && (page[i] == '"' || page[i] == '\'')) ++i;
      while (i < page.size() && blank(page[i])) ++i;
      size_t scheme_end = i;
      while (scheme_end < page.size() && std::isalpha(static_cast<unsigned char>(page[scheme_end]))) ++scheme_end;
      if (scheme_end < page.size() && page[scheme_end] == ':') i = scheme_end + 1;
      if (page.compare(i, 2, "//") == 0) return page.substr(at, 60);
    }
  }
  return "";
}

TEST(ReportHtmlTest, FindsRemoteReferences) {
  EXPECT_EQ(FindRemoteReference("<img src=\"https://x/a.png\">"), "src=\"https://x/a.png\">");
  EXPECT_EQ(FindRemoteReference("<a HREF = '//x'>"), "href = '//x'>");
  EXPECT_EQ(FindRemoteReference("body { background: url( http://x ) }"), "url( http://x ) }");
  EXPECT_EQ(FindRemoteReference("<style>@import 'x.css'</style>"), "@import 'x.css'</style>");
  EXPECT_EQ(FindRemoteReference("<div data-rendered=\"ok\" src=\"#local\">url(#g)</div>"), "");
}

TEST(ReportHtmlTest, RefersToNothingOnTheNetwork) {
  const std::string page = RenderReportHtml(RealisticReport());
  // No attribute or stylesheet that loads something from elsewhere.
  EXPECT_EQ(FindRemoteReference(page), "");
  // The only URL is the SVG namespace, a name that is never fetched.
  for (const char* scheme : {"http://", "https://"}) {
    for (size_t at = page.find(scheme); at != std::string::npos; at = page.find(scheme, at + 1))
      EXPECT_EQ(page.substr(at, 26), "http://www.w3.org/2000/svg") << page.substr(at, 80);
  }
  // And the browser is told to fetch nothing even if asked.
  EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none';"), std::string::npos);
}

TEST(ReportHtmlTest, EmptyReportRenders) {
  for (const Report& report : {Report{}, EmptyReport()}) {
    const std::string page = RenderReportHtml(report);
    const std::string json = Unescape(DataElementText(page));
    EXPECT_EQ(SqliteJson("json_valid(?1)", json), "1") << json;
    EXPECT_EQ(json, "\n" + ReportToJson(report, ReportJsonRows::kArrays));
    EXPECT_LT(page.size(), 100'000u);
  }
}

// Millions of rows in the pictures' sections: the page keeps the first rows
// of the largest ones, says how many it left out, and stays valid.
TEST(ReportHtmlTest, BoundsThePageSizeByDroppingPictureRows) {
  Report report = RealisticReport();
  auto& timeline = Get(report, "html_timeline").rows;
  timeline.clear();
  for (int64_t i = 0; i < 1'500'000; ++i)
    timeline.push_back({i % 64, i / 64, i % 1000, int64_t{1234567}, int64_t{2345678}});
  auto& slices = Get(report, "html_window_slices").rows;
  for (int64_t i = 0; i < 300'000; ++i) {
    slices.push_back({kStart + i, int64_t{1000}, int64_t{0}, std::string(kHostileThread), int64_t{7},
                      int64_t{700}, std::string("thread"), std::string("worker"), std::string("")});
  }
  auto& runs = Get(report, "html_window_runs").rows;
  for (int64_t i = 0; i < 300'000; ++i)
    runs.push_back({i % 64, kStart + i, int64_t{500}, int64_t{7}, std::string("worker"), int64_t{3}});

  const std::string page = RenderReportHtml(report);
  EXPECT_LT(page.size(), kReportHtmlMaxBytes);
  const std::string data = DataElementText(page);
  EXPECT_LE(data.size(), kReportHtmlMaxDataBytes);
  EXPECT_GT(data.size(), kReportHtmlMaxDataBytes * 9 / 10);  // Trimmed to fit, not to nothing.
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.substr(data.size() - 3), "}}\n");
  const std::string json = Unescape(data);
  ASSERT_EQ(SqliteJson("json_valid(?1)", json), "1");

  // The three large sections lost rows, from the end; the small ones none.
  const std::string trimmed = DataElementText(page, "sluice-report-trimmed");
  ASSERT_EQ(SqliteJson("json_valid(?1)", trimmed), "1") << trimmed;
  for (const char* name : {"html_timeline", "html_window_slices", "html_window_runs"}) {
    const std::string path = std::string("'$.") + name;
    const std::string kept = SqliteJson("json_extract(?1, " + path + ".kept')", trimmed);
    const std::string dropped = SqliteJson("json_extract(?1, " + path + ".dropped')", trimmed);
    const size_t rows = Get(report, name).rows.size();
    EXPECT_EQ(std::stoull(kept) + std::stoull(dropped), rows) << name;
    EXPECT_GT(std::stoull(kept), 1000u) << name;
    EXPECT_EQ(SqliteJson("json_array_length(?1, '$.sections." + std::string(name) + ".rows')", json), kept);
  }
  EXPECT_EQ(SqliteJson("json_extract(?1, '$.sections.html_timeline.rows[1]')", json), "[1,0,1,1234567,2345678]");
  for (const char* name : {"overview", "losses", "cpu_by_thread", "html_latency_histogram", "html_processes"}) {
    EXPECT_EQ(SqliteJson("json_type(?1, '$." + std::string(name) + "')", trimmed), "<null>") << name;
    EXPECT_EQ(SqliteJson("json_array_length(?1, '$.sections." + std::string(name) + ".rows')", json),
              std::to_string(Get(report, name).rows.size()));
  }
}

// Tables too large on their own (no SQL file makes one, but the bound holds
// for any Report): the pictures' rows go, then the tables'.
TEST(ReportHtmlTest, BoundsThePageSizeWhenTablesAloneAreTooLarge) {
  Report report = RealisticReport();
  auto& counters = Get(report, "counters").rows;
  for (int64_t i = 0; i < 200'000; ++i) {
    counters.push_back({std::string(100, 'c'), std::string("atrace_counter"), std::string("pid 1"), i, 1.0,
                        2.0, 1.5});
  }
  const std::string page = RenderReportHtml(report);
  EXPECT_LT(page.size(), kReportHtmlMaxBytes);
  const std::string json = Unescape(DataElementText(page));
  ASSERT_EQ(SqliteJson("json_valid(?1)", json), "1");
  EXPECT_EQ(SqliteJson("json_array_length(?1, '$.sections.html_window_slices.rows')", json), "0");
  EXPECT_EQ(SqliteJson("json_array_length(?1, '$.sections.cpu_by_thread.rows')", json), "2");
  const std::string trimmed = DataElementText(page, "sluice-report-trimmed");
  EXPECT_EQ(SqliteJson("json_extract(?1, '$.counters.kept') + json_extract(?1, '$.counters.dropped')", trimmed),
            "200001");
}

// ---- In a browser -----------------------------------------------------------

// A browser test may skip where no Chromium is installed; under CI=true,
// where mk/ensure-deps.sh installs chromium-headless-shell, a skip is a
// failure (as SLUICE_KERNEL_SKIP does for kernel features).
#define SLUICE_BROWSER_SKIP(reason)                                              \
  do {                                                                           \
    if (::sluice::testing::RunningUnderCi()) {                                   \
      FAIL() << "browser test cannot run under CI=true: " << (reason);           \
    } else {                                                                     \
      GTEST_SKIP() << (reason);                                                  \
    }                                                                            \
  } while (0)

// The first Chromium found: the binaries themselves before Debian's /usr/bin
// wrapper scripts, so that a kill on timeout reaches the browser, not a
// shell that would leave it running.
std::string FindChromium() {
  for (const char* path : {"/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium-headless-shell",
                           "/usr/lib/chromium/chromium", "/usr/bin/chromium"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

class ReportHtmlBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    dir_ = testing::MakeTempDir("sluice-report-html-");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);  // Chromium's profile has subdirectories.
  }

  // Writes `page`, loads it in Chromium and returns the DOM its script
  // built ("" with a test failure if the browser did not finish).
  std::string RenderInBrowser(const std::string& page) {
    const std::string page_path = dir_ + "/report.html";
    std::ofstream(page_path) << page;
    testing::ChildProcess browser;
    // A fresh profile, nothing that reaches out; --no-sandbox as the tests
    // run as root, where Chromium refuses its sandbox.
    const std::vector<std::string> argv = {
        chromium_, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + dir_ + "/profile",
        "--no-first-run", "--disable-background-networking", "--disable-extensions",
        "--window-size=1280,1024", "--dump-dom", "file://" + page_path};
    const uint64_t started = testing::NowMs();
    if (!browser.Start(argv, dir_ + "/dom.html", dir_ + "/chromium.err")) {
      ADD_FAILURE() << "cannot start " << chromium_;
      return "";
    }
    // Only bounds how long a hung browser takes to fail (the machine may be
    // busy); a good run takes about a second.
    if (!browser.Wait(testing::ScaledTimeoutMs(120'000))) {
      browser.Terminate(5000);
      ADD_FAILURE() << chromium_ << " did not finish in 120 s: " << browser.Describe();
      return "";
    }
    if (!browser.exited_normally_with(0)) {
      ADD_FAILURE() << chromium_ << " failed: " << browser.Describe();
      return "";
    }
    std::printf("page of %zu bytes drawn and dumped by Chromium in %llu ms\n", page.size(),
                static_cast<unsigned long long>(testing::NowMs() - started));
    return browser.Stdout();
  }

  std::string DrawTrace(StatusOr<std::unique_ptr<QueryEngine>> engine, const std::string& name, Report* report);

  std::string chromium_, dir_;
};

// The <body ...> start tag of a dumped DOM.
std::string BodyTag(const std::string& dom) {
  size_t at = dom.find("<body");
  return at == std::string::npos ? "<no body>" : dom.substr(at, dom.find('>', at) - at + 1);
}

TEST_F(ReportHtmlBrowserTest, DrawsEveryPart) {
  if (chromium_.empty()) SLUICE_BROWSER_SKIP("no Chromium: apt-get install chromium-headless-shell");
  const Report report = RealisticReport();
  const std::string dom = WithoutData(RenderInBrowser(RenderReportHtml(report)));
  ASSERT_FALSE(dom.empty());

  EXPECT_NE(BodyTag(dom).find("data-rendered=\"ok\""), std::string::npos) << BodyTag(dom);
  EXPECT_NE(dom.find("<pre id=\"script-errors\"></pre>"), std::string::npos)
      << dom.substr(dom.find("script-errors"), 2000);
  // The hostile names are text, not elements, and none of them ran.
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos) << BodyTag(dom);
  EXPECT_EQ(Count(dom, "<script"), 4u);
  EXPECT_EQ(Count(dom, "<img"), 0u);
  EXPECT_NE(dom.find("<td class=\"text\">&lt;/script&gt;&lt;script&gt;document.body.dataset.pwned=1&lt;/script&gt;</td>"),
            std::string::npos);
  EXPECT_NE(dom.find("&lt;img src=x onerror=\"document.body.dataset.pwned=3\"&gt;"), std::string::npos);

  // Each part, with one element per row of its data.
  EXPECT_NE(dom.find("<section id=\"losses\" class=\"alert\">"), std::string::npos);
  EXPECT_EQ(Count(dom, "class=\"loss-row\""), 1u);
  EXPECT_EQ(Count(dom, "class=\"timeline-cpu\""), 2u);
  EXPECT_NE(dom.find("id=\"timeline-cpu-0\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"timeline-cpu-1\""), std::string::npos);
  EXPECT_EQ(Count(dom, "class=\"legend-item\""), 4u);
  EXPECT_EQ(Count(dom, "class=\"hist-bar\""), report.Find("html_latency_histogram")->rows.size());
  EXPECT_EQ(Count(dom, "class=\"slice\"") + Count(dom, "class=\"slice open\""), 300u);
  EXPECT_EQ(Count(dom, "class=\"slice open\""), 1u);
  EXPECT_EQ(Count(dom, "class=\"run\""), 200u);
  EXPECT_NE(dom.find("Showing 300 of 3000 slices in the window"), std::string::npos);
  EXPECT_NE(dom.find("sluice report /var/tmp/traces/boot.pftrace --html FILE --window START,END"),
            std::string::npos);
  for (const char* id : {"overview", "timeline", "latency", "slices", "runs", "table-overview",
                         "table-cpu_by_process", "table-cpu_by_thread", "table-cpu_utilization",
                         "table-sched_latency", "table-longest_slices", "table-slice_names", "table-counters"}) {
    EXPECT_NE(dom.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  }
}

// The page of a real trace, from the section files through BuildReport:
// `report` gets the report, the result is the DOM the browser drew, checked
// to have rendered without a script error ("" with a failure otherwise).
std::string ReportHtmlBrowserTest::DrawTrace(StatusOr<std::unique_ptr<QueryEngine>> engine, const std::string& name,
                                             Report* report) {
  if (!engine.ok()) {
    ADD_FAILURE() << engine.status().message();
    return "";
  }
  ReportOptions options;
  options.html_sections = true;
  StatusOr<Report> built = BuildReport((*engine)->db(), name, options);
  if (!built.ok()) {
    ADD_FAILURE() << built.status().message();
    return "";
  }
  *report = std::move(*built);
  const std::string dom = WithoutData(RenderInBrowser(RenderReportHtml(*report)));
  if (dom.empty()) return dom;
  EXPECT_NE(BodyTag(dom).find("data-rendered=\"ok\""), std::string::npos) << BodyTag(dom);
  EXPECT_NE(dom.find("<pre id=\"script-errors\"></pre>"), std::string::npos)
      << dom.substr(dom.find("script-errors"), 2000);
  return dom;
}

// The atrace recording: CPU runs, slices on thread and process tracks,
// counters, an error row.
TEST_F(ReportHtmlBrowserTest, DrawsARecordedTrace) {
  if (chromium_.empty()) SLUICE_BROWSER_SKIP("no Chromium: apt-get install chromium-headless-shell");
  Report report;
  const std::string dom =
      DrawTrace(QueryEngine::Open(testing::QueryTracePath("atrace_rec")), "atrace_rec.pftrace", &report);
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(Count(dom, "class=\"timeline-cpu\""), 2u);
  EXPECT_EQ(Count(dom, "class=\"hist-bar\""), report.Find("html_latency_histogram")->rows.size());
  EXPECT_EQ(Count(dom, "class=\"slice\"") + Count(dom, "class=\"slice open\""),
            report.Find("html_window_slices")->rows.size());
  EXPECT_EQ(Count(dom, "class=\"run\""), report.Find("html_window_runs")->rows.size());
  EXPECT_EQ(Count(dom, "class=\"loss-row\""), report.Find("losses")->rows.size());
  EXPECT_NE(dom.find("id=\"table-sched_latency\""), std::string::npos);
}

// A trace of the host and two relayed machines: every CPU a timeline row,
// each guest's under a heading of its own and labelled by its machine.
TEST_F(ReportHtmlBrowserTest, DrawsEachMachinesCpus) {
  if (chromium_.empty()) SLUICE_BROWSER_SKIP("no Chromium: apt-get install chromium-headless-shell");
  Report report;
  const std::string dom = DrawTrace(QueryEngine::OpenBytes(testing::TwoGuestsTrace()), "two_guests.pftrace", &report);
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(Count(dom, "class=\"timeline-cpu\""), 5u);
  EXPECT_EQ(Count(dom, "class=\"lane-machine\""), 2 * 2u);  // The timeline's and the window's runs.
  EXPECT_NE(dom.find(">guest-a CPU 1<"), std::string::npos);
  EXPECT_NE(dom.find(">guest-b CPU 0<"), std::string::npos);
  EXPECT_NE(dom.find("id=\"table-machines\""), std::string::npos);
}

TEST_F(ReportHtmlBrowserTest, SaysWhatIsMissing) {
  if (chromium_.empty()) SLUICE_BROWSER_SKIP("no Chromium: apt-get install chromium-headless-shell");
  // What the SQL files give for a trace without data: no rows but the
  // timeline's scale and the window's bounds.
  Report report = EmptyReport();
  Get(report, "html_timeline_scale").rows = {{kStart, kSpan / kBuckets, kBuckets, int64_t{2}}};
  Get(report, "html_window").rows = {{kStart, kStart + kSpan, int64_t{0}, int64_t{0}}};
  const std::string dom = RenderInBrowser(RenderReportHtml(report));
  ASSERT_FALSE(dom.empty());
  EXPECT_NE(BodyTag(dom).find("data-rendered=\"ok\""), std::string::npos) << BodyTag(dom);
  EXPECT_NE(dom.find("<pre id=\"script-errors\"></pre>"), std::string::npos);
  for (const char* text : {"Nothing lost", "No CPU ran anything in this trace", "No thread waited to run",
                           "No slices in this trace.",
                           "No counters in this trace.", "No overview"}) {
    EXPECT_NE(dom.find(text), std::string::npos) << text;
  }

  // A report without any section at all.
  const std::string bare = RenderInBrowser(RenderReportHtml(Report{}));
  EXPECT_NE(BodyTag(bare).find("data-rendered=\"ok\""), std::string::npos) << BodyTag(bare);
  EXPECT_NE(bare.find("The report has no tables."), std::string::npos);
  EXPECT_NE(bare.find("The report has no CPU timeline."), std::string::npos);
}

// The largest data the SQL files give (100 CPUs x 1000 spans, 20000 slices
// and 20000 runs; more than the page holds, so it is trimmed too) draws
// without error; the time it took is printed.
TEST_F(ReportHtmlBrowserTest, DrawsAFullSizeReport) {
  if (chromium_.empty()) SLUICE_BROWSER_SKIP("no Chromium: apt-get install chromium-headless-shell");
  const Report report = RealisticReport(100, 20'000, 20'000, 1000);
  const std::string page = RenderReportHtml(report);
  const std::string json = Unescape(DataElementText(page));
  std::map<std::string, unsigned long long> rows_in_page;
  for (const char* name : {"html_timeline", "html_window_slices", "html_window_runs"}) {
    rows_in_page[name] = std::stoull(SqliteJson(
        "json_array_length(?1, '$.sections." + std::string(name) + ".rows')", json));
  }
  const std::string dom = WithoutData(RenderInBrowser(page));
  ASSERT_FALSE(dom.empty());
  EXPECT_NE(BodyTag(dom).find("data-rendered=\"ok\""), std::string::npos) << BodyTag(dom);
  EXPECT_NE(dom.find("<pre id=\"script-errors\"></pre>"), std::string::npos);
  EXPECT_EQ(Count(dom, "class=\"timeline-cpu\""), 100u);
  EXPECT_EQ(Count(dom, "class=\"slice\"") + Count(dom, "class=\"slice open\""), rows_in_page["html_window_slices"]);
  EXPECT_EQ(Count(dom, "class=\"run\""), rows_in_page["html_window_runs"]);
  std::printf("full-size report: page %zu bytes; kept %llu of 100000 timeline cells, %llu of 20000 slices, "
              "%llu of 20000 runs\n", page.size(), rows_in_page["html_timeline"],
              rows_in_page["html_window_slices"], rows_in_page["html_window_runs"]);
}

}  // namespace
}  // namespace sluice
