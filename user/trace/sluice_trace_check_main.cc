// sluice-trace-check: asserts what a trace holds, for the vm-tests and any
// script. Contract (docs/vm-tests.md):
//
//   sluice-trace-check TRACE [--marker-prefix=P] [--markers=N]
//       [--expect-no-loss | --expect-loss] [--require-event=G/E]...
//       [--require-markers=A-B] [--formats=DIR]
//
// (getopt_long: "--markers 5" works as well, and options may come first.)
// Markers are print events whose text is P followed by a sequence number.
// --expect-no-loss: markers 1..N each exactly once and no data_loss figure.
// --expect-loss: some loss reported, and the number of missing markers equals
// the events the trace reports lost. Exit 0 when all checks hold, 1 when one
// fails, 2 when the trace cannot be read or the command line is wrong. The
// last line is a summary.
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
#include "shm/base/command_line.h"
#include "shm/base/string_util.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"

namespace {

constexpr char kUsage[] =
    "usage: sluice-trace-check TRACE [--marker-prefix=P] [--markers=N]\n"
    "           [--expect-no-loss | --expect-loss] [--require-event=G/E]...\n"
    "           [--require-markers=A-B] [--formats=DIR]\n"
    "  --marker-prefix=P    markers are print events with text P<sequence number>\n"
    "  --markers=N          markers 1..N were written\n"
    "  --expect-no-loss     markers 1..N each exactly once, no data_loss figure\n"
    "  --expect-loss        loss reported, missing markers == events reported lost\n"
    "  --require-event=G/E  the trace holds event G/E (repeatable)\n"
    "  --require-markers=A-B  markers A..B each exactly once\n"
    "  --formats=DIR        each --require-event has DIR/G/E/format\n"
    "  -h, --help           this text\n"
    "Values also as --name VALUE. Exit 0: all checks hold; 1: one failed;\n"
    "2: the trace cannot be read or a usage error. The last line is a summary.\n";

struct Args {
  std::string trace;
  std::string marker_prefix;
  uint64_t markers = 0;
  bool expect_no_loss = false, expect_loss = false;
  std::vector<std::string> require_events;
  uint64_t require_from = 0, require_to = 0;
  std::string formats_dir;
};

// "A-B", or "A" for A-A.
bool ParseMarkerRange(std::string_view text, uint64_t* from, uint64_t* to) {
  size_t dash = text.find('-');
  if (!sluice::ParseU64(text.substr(0, dash), from)) return false;
  if (dash == std::string_view::npos) {
    *to = *from;
    return true;
  }
  return sluice::ParseU64(text.substr(dash + 1), to);
}

sluice::StatusOr<Args> ParseArgs(int argc, char** argv) {
  enum {
    kMarkerPrefix = sluice::kFirstLongOnly,
    kMarkers,
    kExpectNoLoss,
    kExpectLoss,
    kRequireEvent,
    kRequireMarkers,
    kFormats,
  };
  static const struct option kOptions[] = {
      {"marker-prefix", required_argument, nullptr, kMarkerPrefix},
      {"markers", required_argument, nullptr, kMarkers},
      {"expect-no-loss", no_argument, nullptr, kExpectNoLoss},
      {"expect-loss", no_argument, nullptr, kExpectLoss},
      {"require-event", required_argument, nullptr, kRequireEvent},
      {"require-markers", required_argument, nullptr, kRequireMarkers},
      {"formats", required_argument, nullptr, kFormats},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  Args a;
  sluice::Status parsed = sluice::ParseCommandLine(
      argc, argv, "h", kOptions, [&](const sluice::CommandLineArg& arg) -> sluice::Status {
        const std::string v = arg.value ? arg.value : "";
        switch (arg.id) {
          case sluice::kOperand:
            if (!a.trace.empty()) return sluice::Status::Error("one TRACE at a time ('" + v + "')");
            a.trace = v;
            break;
          case kMarkerPrefix: a.marker_prefix = v; break;
          case kMarkers:
            if (!sluice::ParseU64(v, &a.markers))
              return sluice::Status::Error(arg.name + " takes a count, not '" + v + "'");
            break;
          case kExpectNoLoss: a.expect_no_loss = true; break;
          case kExpectLoss: a.expect_loss = true; break;
          case kRequireEvent: a.require_events.push_back(v); break;
          case kRequireMarkers:
            if (!ParseMarkerRange(v, &a.require_from, &a.require_to))
              return sluice::Status::Error(arg.name + " takes a range like 1-200, not '" + v + "'");
            break;
          case kFormats: a.formats_dir = v; break;
          case 'h': return sluice::HelpRequested();
        }
        return sluice::Status::Ok();
      });
  if (parsed.ok() && a.trace.empty()) parsed = sluice::Status::Error("no TRACE given");
  if (!parsed.ok()) return parsed;
  return a;
}

// Marker sequence numbers in the trace's print events, with their counts.
sluice::Status ReadMarkers(const Args& a, std::map<uint64_t, uint64_t>* seen,
                           sluice::TraceFileSummary* summary) {
  return sluice::ReadTraceFile(
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
          if (end != digits) (*seen)[n]++;
        }
      },
      summary);
}

struct MarkerCounts {
  uint64_t duplicates = 0, missing = 0;
};

// The failed checks, one line each.
std::vector<std::string> Check(const Args& a, const sluice::TraceHealth& health,
                               std::map<uint64_t, uint64_t>& seen, MarkerCounts* counts) {
  std::vector<std::string> failures;
  for (const auto& [n, count] : seen)
    if (count > 1) counts->duplicates += count - 1;
  if (a.markers) {
    for (uint64_t n = 1; n <= a.markers; n++)
      if (!seen.count(n)) counts->missing++;
  }
  const uint64_t missing = counts->missing;
  const uint64_t lost = health.data_loss_total();
  if (counts->duplicates) failures.push_back(std::to_string(counts->duplicates) + " duplicate markers");
  if (a.expect_no_loss) {
    if (missing) failures.push_back(std::to_string(missing) + " of " + std::to_string(a.markers) + " markers missing");
    if (lost) failures.push_back("trace reports " + std::to_string(lost) + " lost");
    if (!health.has_trace_stats) failures.push_back("no TraceStats packet");
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
    if (!health.events_by_name.count(name)) failures.push_back("no " + ev + " event in the trace");
    struct stat st;
    if (!a.formats_dir.empty() && stat((a.formats_dir + "/" + ev + "/format").c_str(), &st) != 0)
      failures.push_back(ev + " has no format in " + a.formats_dir);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv);
  if (!args.ok()) return sluice::CommandLineExit(args.status(), "sluice-trace-check", kUsage);
  const Args& a = *args;
  std::map<uint64_t, uint64_t> seen;
  sluice::TraceFileSummary summary;
  sluice::Status s = ReadMarkers(a, &seen, &summary);
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
  MarkerCounts counts;
  std::vector<std::string> failures = Check(a, *health, seen, &counts);
  for (const std::string& f : failures) printf("FAIL: %s\n", f.c_str());
  printf("%s: %llu packets, %llu events, %zu distinct markers, %llu missing, %llu reported lost%s\n",
         failures.empty() ? "OK" : "FAIL", static_cast<unsigned long long>(summary.packets),
         static_cast<unsigned long long>(health->ftrace_events), seen.size(),
         static_cast<unsigned long long>(counts.missing),
         static_cast<unsigned long long>(health->data_loss_total()),
         summary.truncated ? " (truncated)" : "");
  return failures.empty() ? 0 : 1;
}
