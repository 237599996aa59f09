#include "user/cmd/ftrace_formats_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "shm/base/command_line.h"
#include "user/probes/ftrace/ftrace_event_translator.h"
#include "user/probes/tracefs.h"

namespace sluice {

namespace {

bool Matches(const FtraceEventFormat& e, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  for (const std::string& f : filters) {
    if (f == e.group || f == e.group + "/" + e.name || f == e.name) return true;
  }
  return false;
}

void Appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Appendf(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n > 0) out->append(buf, std::min(static_cast<size_t>(n), sizeof(buf) - 1));
}

const char* kUsage =
    "usage: sluice ftrace-formats [TRACEFS_ROOT] [GROUP[/EVENT]...]\n"
    "Prints the ftrace page layout and, per event, its id and fields with the\n"
    "proto field each is written to. TRACEFS_ROOT: a tracefs mount, a copy of\n"
    "one, or its events/ directory (default: the running kernel's tracefs).\n"
    "  -h, --help  this text\n";

}  // namespace

StatusOr<std::string> FindEventsDir(const std::string& root) {
  std::string r = root;
  if (r.empty()) {
    TracefsOptions options;
    options.allow_mount = false;
    auto found = FindTracefsRoot(options);
    if (!found.ok()) return Status::Error(found.status().message() + ", or pass a TRACEFS_ROOT");
    r = *found;
  }
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (IsRegularFile(r + "/header_page")) return r;
  if (IsRegularFile(r + "/events/header_page")) return r + "/events";
  if (root.empty()) return Status::Error("no events/header_page in the tracefs at " + r);
  // A tree copied off a device may lack its header files: its events/
  // directory, or the directory itself if it holds header_event or groups.
  if (IsDirectory(r + "/events")) return r + "/events";
  if (IsRegularFile(r + "/header_event") || IsDirectory(r + "/sched") || IsDirectory(r + "/ftrace")) return r;
  return Status::Error("no header_page in " + root + " or " + root +
                       "/events: pass a tracefs mount or its events/ directory");
}

std::string DescribeFtraceFormats(const FtraceFormatTable& table,
                                  const std::vector<std::string>& filters) {
  std::string out;
  const FtraceHeaderFormat& h = table.header();
  Appendf(&out, "page: %u bytes: timestamp @%u size %u, commit @%u size %u, data @%u size %u%s\n",
          h.page_size(), h.timestamp_offset, h.timestamp_size, h.commit_offset, h.commit_size,
          h.data_offset, h.data_size,
          h.header_page_assumed ? " (no header_page: a 4 KiB page, long as the formats say)" : "");
  Appendf(&out,
          "event header: type_len %u bits, time_delta %u bits; padding %u, time_extend %u, "
          "time_stamp %u%s; data max type_len %u\n",
          h.type_len_bits, h.time_delta_bits, h.padding_type, h.time_extend_type,
          h.time_stamp_type, h.has_time_stamp_type ? "" : " (not listed)", h.data_max_type_len);
  if (h.header_event_assumed) out += "(no header_event: the layout of every kernel since 2.6.30)\n";

  FtraceEventTranslator translator(&table);
  std::vector<const FtraceEventFormat*> events = table.events();
  std::sort(events.begin(), events.end(), [](const auto* a, const auto* b) {
    return a->group != b->group ? a->group < b->group : a->name < b->name;
  });
  size_t shown = 0, known = 0;
  for (const FtraceEventFormat* e : events) {
    if (!Matches(*e, filters)) continue;
    const FtraceEventTranslation* t = translator.Find(e->id);
    shown++;
    if (t && !t->generic) known++;
    Appendf(&out, "\n%s/%s id %u -> %s (%u)\n", e->group.c_str(), e->name.c_str(), e->id,
            t ? t->proto_name.c_str() : "?", t ? t->proto_field : 0);
    Appendf(&out, "  %6s %5s %-32s %-16s %s\n", "offset", "size", "type", "kind", "name -> proto field");
    for (const FtraceFieldFormat& f : e->fields) {
      std::string target;
      if (f.name.rfind("common_", 0) == 0) {
        if (f.name == "common_pid") target = "FtraceEvent.pid";
        else if (f.name == "common_type") target = "(event id)";
        else target = "-";
      } else if (t) {
        for (const auto& ft : t->fields)
          if (ft.format == &f) target = ft.proto_name + " (" + std::to_string(ft.proto_field) + ")";
        for (const auto& [sf, why] : t->skipped)
          if (sf == &f) target = "- (" + why + ")";
      }
      std::string type = f.type + (f.is_signed ? " signed" : "");
      Appendf(&out, "  %6u %5u %-32s %-16s %s%s\n", f.offset, f.size, type.c_str(),
              FtraceFieldKindName(f.kind), f.name.c_str(),
              target.empty() ? "" : (" -> " + target).c_str());
    }
  }
  Appendf(&out, "\n%zu events: %zu with a proto message, %zu as GenericFtraceEvent\n", shown,
          known, shown - known);
  return out;
}

int RunFtraceFormatsCommand(int argc, char** argv) {
  static const struct option kOptions[] = {{"help", no_argument, nullptr, 'h'},
                                           {nullptr, 0, nullptr, 0}};
  std::string root;
  std::vector<std::string> filters;
  Status parsed = ParseCommandLine(argc, argv, "h", kOptions, [&](const CommandLineArg& arg) {
    if (arg.id == 'h') return HelpRequested();
    // The first operand is the root if it looks like a path (starts with
    // '/' or '.') or is a directory holding a tracefs tree; the rest filter.
    const std::string operand = arg.value;
    if (root.empty() && filters.empty() &&
        (operand[0] == '/' || operand[0] == '.' || FindEventsDir(operand).ok()))
      root = operand;
    else
      filters.push_back(operand);
    return Status::Ok();
  });
  if (!parsed.ok()) return CommandLineExit(parsed, "sluice ftrace-formats", kUsage);
  auto dir = FindEventsDir(root);
  if (!dir.ok()) {
    fprintf(stderr, "sluice ftrace-formats: %s\n", dir.status().message().c_str());
    return 1;
  }
  std::vector<std::string> unparsed;
  auto table = FtraceFormatTable::LoadAll(*dir, &unparsed, FtraceFormatTable::Headers::kAssumeIfMissing);
  if (!table.ok()) {
    fprintf(stderr, "sluice ftrace-formats: %s\n", table.status().message().c_str());
    return 1;
  }
  printf("tracefs events: %s\n", dir->c_str());
  std::string text = DescribeFtraceFormats(*table, filters);
  fwrite(text.data(), 1, text.size(), stdout);
  if (!unparsed.empty()) {
    printf("%zu format files could not be read or parsed:", unparsed.size());
    for (const std::string& u : unparsed) printf(" %s", u.c_str());
    printf("\n");
  }
  return 0;
}

}  // namespace sluice
