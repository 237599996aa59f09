#include "user/cmd/record_config.h"

#include <cstdio>
#include <set>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "shm/base/command_line.h"
#include "shm/base/file_util.h"
#include "shm/base/units.h"
#include "sluice/bpf_config.pb.h"
#include "user/probes/probes_producer.h"

namespace sluice {

using perfetto::protos::TraceConfig;

const char kRecordUsage[] =
    "usage: sluice record -o FILE [-t DURATION] [-b SIZE] [--bpf] [EVENTS...]\n"
    "       sluice record -c CONFIG [--txt] [-o FILE]\n"
    "  -o, --out FILE        trace file to write (Perfetto format)\n"
    "  -t, --time DURATION   how long to record: 10s (default), 500ms, 2m\n"
    "  -b, --buffer SIZE     central buffer: 64mb (default)\n"
    "  -k, --kernel-buffer SIZE  kernel buffer per CPU (ftrace; the BPF ring\n"
    "                        with --bpf): 2mb (default)\n"
    "      --smb SIZE        producer shared memory: 8mb (default)\n"
    "  -c, --config FILE     a Perfetto TraceConfig; --txt for text format\n"
    "      --bpf             collect the events BPF supports with the BPF source\n"
    "      --no-compact-sched  write sched_switch/sched_waking as full events\n"
    "      --compress        zlib-compress the trace (Perfetto compressed_packets)\n"
    "      --daemon          record through a running sluiced and sluice-probes\n"
    "      --consumer-socket PATH  sluiced's consumer socket (with --daemon)\n"
    "  -q, --quiet           no status line\n"
    "  -h, --help            this text\n"
    "  EVENTS                ftrace events: sched/sched_switch, sched/*, ftrace/print\n"
    SLUICE_SIZE_HELP SLUICE_DURATION_HELP;

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

// Long-only options take vals from kFirstLongOnly up.
enum {
  kSmb = kFirstLongOnly,
  kTxt,
  kBpf,
  kDaemon,
  kConsumerSocket,
  kCompress,
  kNoCompactSched,
};
const struct option kOptions[] = {
    {"out", required_argument, nullptr, 'o'},
    {"time", required_argument, nullptr, 't'},
    {"buffer", required_argument, nullptr, 'b'},
    {"kernel-buffer", required_argument, nullptr, 'k'},
    {"smb", required_argument, nullptr, kSmb},
    {"config", required_argument, nullptr, 'c'},
    {"txt", no_argument, nullptr, kTxt},
    {"bpf", no_argument, nullptr, kBpf},
    {"daemon", no_argument, nullptr, kDaemon},
    {"consumer-socket", required_argument, nullptr, kConsumerSocket},
    {"quiet", no_argument, nullptr, 'q'},
    {"compress", no_argument, nullptr, kCompress},
    {"no-compact-sched", no_argument, nullptr, kNoCompactSched},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0}};

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
  // Value errors start with the option as typed: "-t: bad duration 'soon'".
  auto with_name = [](const CommandLineArg& arg, const Status& s) {
    return Status::Error(arg.name + ": " + s.message());
  };
  auto handle = [&](const CommandLineArg& arg) -> Status {
    const std::string v = arg.value ? arg.value : "";
    switch (arg.id) {
      case kOperand: a.events.push_back(v); break;
      case 'o': a.output = v; break;
      case 't': {
        StatusOr<uint32_t> ms = ParseDurationMs(v);
        if (!ms.ok()) return with_name(arg, ms.status());
        a.duration_ms = *ms;
        a.duration_set = true;
        break;
      }
      case 'b': {
        StatusOr<uint64_t> kb = ParseSizeKb(v);
        if (!kb.ok()) return with_name(arg, kb.status());
        a.buffer_kb = *kb;
        a.buffer_set = true;
        break;
      }
      case 'k': {
        StatusOr<uint64_t> kb = ParseSizeKb(v);
        if (!kb.ok()) return with_name(arg, kb.status());
        if (*kb > (1u << 22))
          return Status::Error(arg.name + " " + v + " is too large (at most 4gb per CPU)");
        a.kernel_buffer_kb = static_cast<uint32_t>(*kb);
        break;
      }
      case kSmb: {
        StatusOr<uint32_t> kb = ParseProbesSmbKb(v);
        if (!kb.ok()) return with_name(arg, kb.status());
        a.smb_kb = *kb;
        break;
      }
      case 'c': a.config_path = v; break;
      case kTxt: a.config_is_text = true; break;
      case kBpf: a.bpf = true; break;
      case kDaemon: a.daemon = true; break;
      case kConsumerSocket: a.consumer_socket = v; break;
      case 'q': a.quiet = true; break;
      case kCompress: a.compress = true; break;
      case kNoCompactSched: a.no_compact_sched = true; break;
      case 'h': return HelpRequested();
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(ParseCommandLine(argc, argv, "o:t:b:k:c:qh", kOptions, handle));
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
    auto* bpf = ds->mutable_bpf_config();
    for (const std::string& e : bpf_events) bpf->add_events(e);
    // The BPF ring is that source's kernel buffer: -k sizes it as it sizes
    // ftrace's, so one flag says how much the kernel holds for a slow reader.
    bpf->set_ringbuf_size_kb(args.kernel_buffer_kb);
  }
  auto* ps = config.add_data_sources()->mutable_config();
  ps->set_name("linux.process_stats");
  ps->mutable_process_stats_config()->set_scan_all_processes_on_start(true);
  ps->mutable_process_stats_config()->set_record_thread_names(true);
  config.add_data_sources()->mutable_config()->set_name("linux.system_info");
  return config;
}

}  // namespace sluice
