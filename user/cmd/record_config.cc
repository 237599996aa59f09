#include "user/cmd/record_config.h"

#include <cstdio>
#include <set>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "shm/base/file_util.h"
#include "shm/base/units.h"
#include "sluice/bpf_config.pb.h"

namespace sluice {

using perfetto::protos::TraceConfig;

const char kRecordUsage[] =
    "usage: sluice record -o FILE [-t DURATION] [-b SIZE] [--bpf] [EVENTS...]\n"
    "       sluice record -c CONFIG [--txt] [-o FILE]\n"
    "  -o, --out FILE        trace file to write (Perfetto format)\n"
    "  -t, --time DURATION   how long to record: 10s (default), 500ms, 2m\n"
    "  -b, --buffer SIZE     central buffer: 64mb (default)\n"
    "  -k, --kernel-buffer SIZE  ftrace buffer per CPU: 2mb (default)\n"
    "      --smb SIZE        producer shared memory: 8mb (default)\n"
    "  -c, --config FILE     a Perfetto TraceConfig; --txt for text format\n"
    "      --bpf             collect the events BPF supports with the BPF source\n"
    "      --no-compact-sched  write sched_switch/sched_waking as full events\n"
    "      --compress        zlib-compress the trace (Perfetto compressed_packets)\n"
    "      --daemon          record through a running sluiced and sluice-probes\n"
    "      --consumer-socket PATH  sluiced's consumer socket (with --daemon)\n"
    "  -q, --quiet           no status line\n"
    "  EVENTS                ftrace events: sched/sched_switch, sched/*, ftrace/print\n";

namespace {

// Events the BPF source implements (user/probes/bpf/bpf_settings.h).
const std::set<std::string>& BpfEvents() {
  static const std::set<std::string> events = {
      "sched/sched_switch",      "sched/sched_wakeup",        "sched/sched_waking",
      "sched/sched_wakeup_new",  "sched/sched_process_fork",  "sched/sched_process_exec",
      "sched/sched_process_exit", "task/task_rename",         "ftrace/print"};
  return events;
}

class LineColumnErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty())
      first_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) +
               ": " + message;
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {
    fprintf(stderr, "sluice record: config line %d, column %d: %s (ignored)\n", line + 1,
            column + 1, message.c_str());
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace

const std::vector<std::string>& DefaultRecordEvents() {
  static const std::vector<std::string> events = {
      "sched/sched_switch",       "sched/sched_waking",      "sched/sched_wakeup_new",
      "sched/sched_process_fork", "sched/sched_process_exec", "sched/sched_process_exit",
      "sched/sched_process_free", "task/task_newtask",        "task/task_rename",
      "ftrace/print",             "power/cpu_frequency",      "power/cpu_idle"};
  return events;
}

StatusOr<RecordArgs> ParseRecordArgs(int argc, char** argv) {
  RecordArgs a;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> StatusOr<std::string> {
      if (i + 1 >= argc) return Status::Error(std::string(flag) + " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "-o" || arg == "--out") {
      SLUICE_ASSIGN_OR_RETURN(a.output, value("-o"));
    } else if (arg == "-t" || arg == "--time") {
      SLUICE_ASSIGN_OR_RETURN(std::string v, value("-t"));
      SLUICE_ASSIGN_OR_RETURN(a.duration_ms, ParseDurationMs(v));
      a.duration_set = true;
    } else if (arg == "-b" || arg == "--buffer") {
      SLUICE_ASSIGN_OR_RETURN(std::string v, value("-b"));
      SLUICE_ASSIGN_OR_RETURN(a.buffer_kb, ParseSizeKb(v));
      a.buffer_set = true;
    } else if (arg == "-k" || arg == "--kernel-buffer") {
      SLUICE_ASSIGN_OR_RETURN(std::string v, value("-k"));
      SLUICE_ASSIGN_OR_RETURN(uint64_t kb, ParseSizeKb(v));
      if (kb > (1u << 22)) return Status::Error("-k " + v + " is too large (at most 4gb per CPU)");
      a.kernel_buffer_kb = static_cast<uint32_t>(kb);
    } else if (arg == "--smb") {
      SLUICE_ASSIGN_OR_RETURN(std::string v, value("--smb"));
      SLUICE_ASSIGN_OR_RETURN(uint64_t kb, ParseSizeKb(v));
      if (kb > (1u << 20)) return Status::Error("--smb " + v + " is too large (at most 1gb)");
      a.smb_kb = static_cast<uint32_t>(kb);
    } else if (arg == "-c" || arg == "--config") {
      SLUICE_ASSIGN_OR_RETURN(a.config_path, value("-c"));
    } else if (arg == "--txt") {
      a.config_is_text = true;
    } else if (arg == "--bpf") {
      a.bpf = true;
    } else if (arg == "--daemon") {
      a.daemon = true;
    } else if (arg == "--consumer-socket") {
      SLUICE_ASSIGN_OR_RETURN(a.consumer_socket, value("--consumer-socket"));
    } else if (arg == "-q" || arg == "--quiet") {
      a.quiet = true;
    } else if (arg == "--compress") {
      a.compress = true;
    } else if (arg == "--no-compact-sched") {
      a.no_compact_sched = true;
    } else if (arg == "-h" || arg == "--help") {
      return Status::Error("help");
    } else if (!arg.empty() && arg[0] == '-') {
      return Status::Error("unknown option " + arg + " (see sluice record --help)");
    } else {
      a.events.push_back(arg);
    }
  }
  if (!a.config_path.empty() && !a.events.empty())
    return Status::Error("give either -c CONFIG or EVENTS, not both");
  return a;
}

StatusOr<TraceConfig> BuildRecordConfig(const RecordArgs& args) {
  TraceConfig config;
  if (!args.config_path.empty()) {
    StatusOr<std::string> text = ReadFile(args.config_path);
    if (!text.ok()) return Status::Error("config: " + text.status().message() + ": check the path");
    if (args.config_is_text) {
      google::protobuf::TextFormat::Parser parser;
      LineColumnErrors errors;
      parser.RecordErrorsTo(&errors);
      // Fields of upstream's config that sluice's protos leave out are
      // warned about and skipped, as Perfetto skips data sources it lacks.
      parser.AllowUnknownField(true);
      if (!parser.ParseFromString(text.value(), &config))
        return Status::Error(args.config_path + ": " + errors.first() +
                             " (is it a Perfetto TraceConfig in text format?)");
    } else if (!config.ParseFromString(text.value())) {
      return Status::Error(args.config_path +
                           ": not a binary TraceConfig (add --txt for a text config)");
    }
    if (args.duration_set) config.set_duration_ms(args.duration_ms);
    return config;
  }

  auto* buffer = config.add_buffers();
  buffer->set_size_kb(static_cast<uint32_t>(args.buffer_kb));
  buffer->set_fill_policy(TraceConfig::BufferConfig::RING_BUFFER);
  config.set_duration_ms(args.duration_ms);

  std::vector<std::string> events = args.events.empty() ? DefaultRecordEvents() : args.events;
  std::vector<std::string> ftrace_events, bpf_events;
  for (const std::string& e : events) {
    if (args.bpf && BpfEvents().count(e)) bpf_events.push_back(e);
    else ftrace_events.push_back(e);
  }
  if (!ftrace_events.empty()) {
    auto* ds = config.add_data_sources()->mutable_config();
    ds->set_name("linux.ftrace");
    auto* ftrace = ds->mutable_ftrace_config();
    for (const std::string& e : ftrace_events) ftrace->add_ftrace_events(e);
    ftrace->set_buffer_size_kb(args.kernel_buffer_kb);
    ftrace->mutable_compact_sched()->set_enabled(!args.no_compact_sched);
  }
  if (!bpf_events.empty()) {
    auto* ds = config.add_data_sources()->mutable_config();
    ds->set_name("linux.bpf");
    for (const std::string& e : bpf_events) ds->mutable_bpf_config()->add_events(e);
  }
  auto* ps = config.add_data_sources()->mutable_config();
  ps->set_name("linux.process_stats");
  ps->mutable_process_stats_config()->set_scan_all_processes_on_start(true);
  ps->mutable_process_stats_config()->set_record_thread_names(true);
  config.add_data_sources()->mutable_config()->set_name("linux.system_info");
  return config;
}

}  // namespace sluice
