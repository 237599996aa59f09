// sluice-trace-check: asserts what a trace holds, for the vm-tests and any
// script. Contract (docs/vm-tests.md):
//
//   sluice-trace-check TRACE [--marker-prefix=P] [--markers=N]
//       [--expect-no-loss | --expect-loss] [--require-event=G/E]...
//       [--require-markers=A-B] [--formats=DIR]
//
// Markers are print events whose text is P followed by a sequence number.
// --expect-no-loss: markers 1..N each exactly once and no data_loss figure.
// --expect-loss: some loss reported, and the number of missing markers equals
// the events the trace reports lost. Exit 0 when all checks hold, 1 when one
// fails, 2 when the trace cannot be read. The last line is a summary.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"

namespace {

struct Args {
  std::string trace;
  std::string marker_prefix;
  uint64_t markers = 0;
  bool expect_no_loss = false, expect_loss = false;
  std::vector<std::string> require_events;
  uint64_t require_from = 0, require_to = 0;
  std::string formats_dir;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i++) {
    std::string s = argv[i];
    auto val = [&](const char* flag) { return s.substr(std::string(flag).size()); };
    if (s.starts_with("--marker-prefix=")) a.marker_prefix = val("--marker-prefix=");
    else if (s.starts_with("--markers=")) a.markers = strtoull(val("--markers=").c_str(), nullptr, 10);
    else if (s == "--expect-no-loss") a.expect_no_loss = true;
    else if (s == "--expect-loss") a.expect_loss = true;
    else if (s.starts_with("--require-event=")) a.require_events.push_back(val("--require-event="));
    else if (s.starts_with("--require-markers=")) {
      std::string r = val("--require-markers=");
      size_t dash = r.find('-');
      a.require_from = strtoull(r.substr(0, dash).c_str(), nullptr, 10);
      a.require_to = dash == std::string::npos ? a.require_from
                                               : strtoull(r.substr(dash + 1).c_str(), nullptr, 10);
    } else if (s.starts_with("--formats=")) a.formats_dir = val("--formats=");
    else if (!s.empty() && s[0] != '-' && a.trace.empty()) a.trace = s;
    else {
      fprintf(stderr, "sluice-trace-check: unknown argument %s (see the header of "
                      "user/trace/sluice_trace_check_main.cc)\n", s.c_str());
      return 2;
    }
  }
  if (a.trace.empty()) {
    fprintf(stderr, "usage: sluice-trace-check TRACE [--marker-prefix=P] [--markers=N] "
                    "[--expect-no-loss|--expect-loss] [--require-event=G/E]... "
                    "[--require-markers=A-B] [--formats=DIR]\n");
    return 2;
  }

  // Marker sequence numbers seen, with their counts.
  std::map<uint64_t, uint64_t> seen;
  sluice::TraceFileSummary summary;
  sluice::Status s = sluice::ReadTraceFile(
      a.trace,
      [&](std::string_view bytes) {
        if (a.marker_prefix.empty()) return;
        perfetto::protos::TracePacket p;
        if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !p.has_ftrace_events())
          return;
        for (const auto& e : p.ftrace_events().event()) {
          if (!e.has_print()) continue;
          const std::string& buf = e.print().buf();
          size_t at = buf.find(a.marker_prefix);
          if (at == std::string::npos) continue;
          const char* digits = buf.c_str() + at + a.marker_prefix.size();
          char* end = nullptr;
          uint64_t n = strtoull(digits, &end, 10);
          if (end != digits) seen[n]++;
        }
      },
      &summary);
  if (!s.ok()) {
    fprintf(stderr, "sluice-trace-check: %s\n", s.message().c_str());
    puts("FAIL: trace unreadable");
    return 2;
  }
  auto health = sluice::AnalyzeTraceFile(a.trace);
  if (!health.ok()) {
    fprintf(stderr, "sluice-trace-check: %s\n", health.status().message().c_str());
    puts("FAIL: trace unreadable");
    return 2;
  }

  std::vector<std::string> failures;
  uint64_t duplicates = 0, missing = 0;
  for (const auto& [n, count] : seen)
    if (count > 1) duplicates += count - 1;
  if (a.markers) {
    for (uint64_t n = 1; n <= a.markers; n++)
      if (!seen.count(n)) missing++;
  }
  const uint64_t lost = health->data_loss_total();
  if (duplicates) failures.push_back(std::to_string(duplicates) + " duplicate markers");
  if (a.expect_no_loss) {
    if (missing) failures.push_back(std::to_string(missing) + " of " + std::to_string(a.markers) + " markers missing");
    if (lost) failures.push_back("trace reports " + std::to_string(lost) + " lost");
    if (!health->has_trace_stats) failures.push_back("no TraceStats packet");
  }
  if (a.expect_loss) {
    if (!lost) failures.push_back("no loss reported");
    if (missing != lost)
      failures.push_back(std::to_string(missing) + " markers missing but " + std::to_string(lost) +
                         " events reported lost");
  }
  for (uint64_t n = a.require_from; a.require_to && n <= a.require_to; n++) {
    if (seen[n] != 1) {
      failures.push_back("marker " + std::to_string(n) + " seen " + std::to_string(seen[n]) + " times");
      break;
    }
  }
  for (const std::string& ev : a.require_events) {
    std::string name = ev.substr(ev.find('/') == std::string::npos ? 0 : ev.find('/') + 1);
    if (!health->events_by_name.count(name)) failures.push_back("no " + ev + " event in the trace");
    struct stat st;
    if (!a.formats_dir.empty() && stat((a.formats_dir + "/" + ev + "/format").c_str(), &st) != 0)
      failures.push_back(ev + " has no format in " + a.formats_dir);
  }
  for (const std::string& f : failures) printf("FAIL: %s\n", f.c_str());
  printf("%s: %llu packets, %llu events, %zu distinct markers, %llu missing, %llu reported lost%s\n",
         failures.empty() ? "OK" : "FAIL", static_cast<unsigned long long>(summary.packets),
         static_cast<unsigned long long>(health->ftrace_events), seen.size(),
         static_cast<unsigned long long>(missing), static_cast<unsigned long long>(lost),
         summary.truncated ? " (truncated)" : "");
  return failures.empty() ? 0 : 1;
}
