#include "user/cmd/record_config.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "shm/base/string_util.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "shm/base/command_line.h"
#include "shm/base/file_util.h"
#include "shm/base/units.h"
#include "sluice/bpf_config.pb.h"
#include "user/probes/ftrace/atrace_categories.h"
#include "user/probes/ftrace/ftrace_settings.h"
#include "user/probes/probes_producer.h"

namespace sluice {

using perfetto::protos::TraceConfig;

const char kRecordUsage[] =
    "usage: sluice record -o FILE [-t DURATION] [-b SIZE] [--bpf] [CATEGORIES...] [EVENTS...]\n"
    "       sluice record -c CONFIG [--txt] [-o FILE]\n"
    "       sluice record --list\n"
    "  -o, --out FILE        trace file to write (Perfetto format); - for stdout.\n"
    "                        Written as FILE.recording-XXXXXX, renamed at the end\n"
    "  -t, --time DURATION   how long to record: 10s (default), 500ms, 2m\n"
    "  -b, --buffer SIZE     central buffer: 64mb (default)\n"
    "      --stream          write the trace while recording (the default without\n"
    "                        -c): the file is valid at any moment, even if sluice\n"
    "                        is killed, and -b only has to hold a second of data\n"
    "      --file-lag DURATION  how far behind the streamed file may fall while\n"
    "                        the machine is at rest: 5m (default; a second while\n"
    "                        events flow or the status line is drawn); 1s keeps\n"
    "                        it a second behind, at a few ms of CPU a second\n"
    "      --ring            flight recorder: keep the newest -b of data in memory,\n"
    "                        overwriting the oldest; write it when recording ends\n"
    "                        (-t, Ctrl-C, SIGTERM or SIGHUP)\n"
    "      --discard         keep the first -b of data in memory and drop what\n"
    "                        comes after; write it when recording ends\n"
    "  -k, --kernel-buffer SIZE  kernel buffer per CPU (ftrace; the BPF ring\n"
    "                        with --bpf): 2mb (default)\n"
    "      --smb SIZE        producer shared memory: 8mb (default)\n"
    "  -c, --config FILE     a Perfetto TraceConfig (- for stdin); --txt for text\n"
    "                        format; -t, -b, -k and the modes apply on top of it,\n"
    "                        which otherwise says the mode (write_into_file)\n"
    "      --allow-unknown-fields  warn about fields of a text config that sluice\n"
    "                        does not know (configs for a newer Perfetto), not fail\n"
    "      --bpf             collect the events BPF supports with the BPF source\n"
    "      --no-compact-sched  write sched_switch/sched_waking as full events\n"
    "      --ftrace-read=MODE  how ftrace reads each CPU's kernel buffer: auto\n"
    "                        (default: splice, which costs less CPU where\n"
    "                        both exist), splice, or mapped (in place\n"
    "                        through the buffer's memory mapping, Linux 6.10+;\n"
    "                        more CPU, as the kernel walks every event of a\n"
    "                        mapped page: docs/PERFORMANCE.md)\n"
    "      --compress zstd[:LEVEL]|deflate|none  compress the trace as it is\n"
    "                        written, in packets of under 512 KiB that upstream\n"
    "                        Perfetto reads (TraceConfig.compression): zstd at\n"
    "                        LEVEL 1-22 (default 3; v58+ readers), deflate (any\n"
    "                        Perfetto), none (also over a config's choice)\n"
    "      --rotate SIZE|DURATION  cut the trace into files that each load alone:\n"
    "                        a new one once the file holds SIZE (100mb) or spans\n"
    "                        DURATION (10m); both may be given. -o DIR/NAME.pftrace\n"
    "                        names them DIR/NAME.000001.pftrace, ... (written as\n"
    "                        .recording, renamed once finished), compressed\n"
    "                        (zstd) unless --compress says otherwise; until\n"
    "                        stopped unless -t is given\n"
    "      --keep N          with --rotate: delete the oldest files beyond the newest N\n"
    "      --on-rotate CMD   with --rotate: run `sh -c CMD` with each finished file's\n"
    "                        path as its last argument (and $SLUICE_TRACE_FILE);\n"
    "                        a failure is reported, the recording goes on\n"
    "      --daemon          record through a running sluiced and sluice-probes\n"
    "      --consumer-socket PATH  sluiced's consumer socket (with --daemon)\n"
    "      --detach=KEY      (with --daemon) start the session in sluiced under KEY\n"
    "                        and return at once; sluiced records and writes\n"
    "                        FILE.recording-XXXXXX; --attach=KEY takes it back\n"
    "      --attach=KEY      take over the detached session KEY (implies --daemon;\n"
    "                        only -o, --stop, -q, --compress and --consumer-socket\n"
    "                        go with it): wait for its end, Ctrl-C stops it, and\n"
    "                        its file is put at -o (default: the one --detach had)\n"
    "      --stop            with --attach: stop the session now\n"
    "  Triggers (-c config's trigger_config; with --daemon): `sluice trigger NAME`\n"
    "  starts (START_TRACING) or stops (STOP_TRACING) the session, or snapshots it\n"
    "  (CLONE_SNAPSHOT: each trigger writes FILE.1, FILE.2, ...). If no START or\n"
    "  STOP trigger fires within trigger_timeout_ms, nothing is written and the\n"
    "  exit status is 3.\n"
    "  -q, --quiet           no status line\n"
    "      --list            the categories and the events behind each\n"
    "  -h, --help            this text\n"
    "  CATEGORIES            atrace categories, as Perfetto and atrace name them:\n"
    "                        sched freq idle irq disk workq memreclaim ... (--list)\n"
    "  EVENTS                ftrace events: sched/sched_switch, sched/*, ftrace/print\n"
    "  Without CATEGORIES or EVENTS: sched, task, power and print events.\n"
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
  kList,
  kAllowUnknownFields,
  kStream,
  kRing,
  kDiscard,
  kDetach,
  kAttach,
  kStop,
  kFtraceRead,
  kFileLag,
  kRotate,
  kKeep,
  kOnRotate,
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
    {"compress", required_argument, nullptr, kCompress},
    {"no-compact-sched", no_argument, nullptr, kNoCompactSched},
    {"list", no_argument, nullptr, kList},
    {"allow-unknown-fields", no_argument, nullptr, kAllowUnknownFields},
    {"stream", no_argument, nullptr, kStream},
    {"ring", no_argument, nullptr, kRing},
    {"discard", no_argument, nullptr, kDiscard},
    {"detach", required_argument, nullptr, kDetach},
    {"attach", required_argument, nullptr, kAttach},
    {"stop", no_argument, nullptr, kStop},
    {"ftrace-read", required_argument, nullptr, kFtraceRead},
    {"file-lag", required_argument, nullptr, kFileLag},
    {"rotate", required_argument, nullptr, kRotate},
    {"keep", required_argument, nullptr, kKeep},
    {"on-rotate", required_argument, nullptr, kOnRotate},
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

namespace {

// An always-on recorder's files are kept for weeks: compressed unless
// --compress says otherwise, with zstd at its default level (upstream
// Perfetto v58's codec; docs/PERFORMANCE.md has its bytes and CPU).
TraceCompression RotatedFileCompression() { return TraceCompression{TraceCodec::kZstd, 0}; }

// --rotate's value: a size (it ends in b: 100mb) or a duration (10m, 1h).
Status ParseRotateValue(const std::string& name, const std::string& v, FileRotationOptions* rotation) {
  const bool size = !v.empty() && (v.back() == 'b' || v.back() == 'B');
  const bool duration = !v.empty() && !size && !std::isdigit(static_cast<unsigned char>(v.back()));
  if (!size && !duration)
    return Status::Error(name + ": '" + v + "' needs a unit: a size (100mb, 1gb) or a duration (10m, 1h)");
  if (size) {
    StatusOr<uint64_t> kb = ParseSizeKb(v);
    if (!kb.ok()) return Status::Error(name + ": " + kb.status().message());
    if (*kb < 64) return Status::Error(name + ": " + v + " is too small for a trace file: give 64kb or more");
    if (rotation->max_bytes) return Status::Error(name + ": give one size (and at most one duration)");
    rotation->max_bytes = *kb * 1024;
  } else {
    StatusOr<uint32_t> ms = ParseDurationMs(v);
    if (!ms.ok()) return Status::Error(name + ": " + ms.status().message());
    if (*ms < 1000) return Status::Error(name + ": " + v + " is shorter than a second: give 1s or more");
    if (rotation->max_ms) return Status::Error(name + ": give one duration (and at most one size)");
    rotation->max_ms = *ms;
  }
  return Status::Ok();
}

// --rotate, --keep and --on-rotate: what goes with them.
Status CheckRotationArgs(const RecordArgs& a) {
  if (!a.rotation.enabled()) {
    // A -c config may ask for rotation itself (ApplyConfigRotation).
    if ((a.rotation.keep || !a.on_rotate.empty()) && a.config_path.empty())
      return Status::Error(std::string(a.rotation.keep ? "--keep" : "--on-rotate") +
                           " goes with --rotate SIZE|DURATION");
    return Status::Ok();
  }
  if (a.output == "-") return Status::Error("--rotate writes several files: give -o DIR/NAME.pftrace, not -o -");
  if (a.mode == RecordMode::kRing || a.mode == RecordMode::kDiscard)
    return Status::Error("--rotate cuts a trace written while recording: drop --ring/--discard (or use --stream)");
  if (!a.on_rotate.empty() && !a.detach_key.empty())
    return Status::Error("--on-rotate runs in this command, which --detach ends at once: drop one");
  if (!a.attach_key.empty())
    return Status::Error("--attach=KEY takes the session as it was started: drop --rotate/--keep/--on-rotate");
  return Status::Ok();
}

}  // namespace

Status ApplyConfigRotation(RecordArgs* args, TraceConfig* config, std::vector<std::string>* notes) {
  if (args->rotation.enabled() || !config->has_sluice_rotation()) {
    if (!args->rotation.enabled() && (args->rotation.keep || !args->on_rotate.empty()))
      return Status::Error(std::string(args->rotation.keep ? "--keep" : "--on-rotate") +
                           " goes with --rotate SIZE|DURATION or a config's sluice_rotation");
    if (args->rotation.enabled() && config->has_sluice_rotation() && notes)
      notes->push_back("--rotate: the config's sluice_rotation is replaced");
    return Status::Ok();
  }
  const sluice::protos::RotationConfig& r = config->sluice_rotation();
  if (r.max_file_bytes() == 0 && r.max_file_duration_ms() == 0)
    return Status::Error("the config's sluice_rotation names neither max_file_bytes nor max_file_duration_ms");
  if (r.max_file_bytes() != 0 && r.max_file_bytes() < (64u << 10))
    return Status::Error("the config's sluice_rotation.max_file_bytes is under 64 KiB: give 65536 or more");
  if (r.max_file_duration_ms() != 0 && r.max_file_duration_ms() < 1000)
    return Status::Error("the config's sluice_rotation.max_file_duration_ms is under a second: give 1000 or more");
  args->rotation.max_bytes = r.max_file_bytes();
  args->rotation.max_ms = r.max_file_duration_ms();
  if (args->rotation.keep == 0) args->rotation.keep = r.keep_files();
  SLUICE_RETURN_IF_ERROR(CheckRotationArgs(*args));
  if (!args->compression_set && !TraceCompressionOf(*config).enabled()) {
    if (notes) notes->push_back("sluice_rotation: compression none -> zstd (rotated files are compressed unless --compress none says not)");
    SetTraceCompression(RotatedFileCompression(), config);
  }
  return Status::Ok();
}

namespace {

// --detach, --attach and --stop: what goes with them.
Status CheckSessionControlArgs(RecordArgs* a) {
  if (a->stop && a->attach_key.empty())
    return Status::Error("--stop stops a detached session: give --attach=KEY with it");
  if (!a->detach_key.empty() && !a->attach_key.empty())
    return Status::Error("give --detach=KEY to start a session or --attach=KEY to take one over, not both");
  if (!a->detach_key.empty()) {
    if (!a->daemon)
      return Status::Error("--detach needs --daemon: a detached session runs in sluiced, which outlives "
                           "this command (start sluiced and sluice-probes: docs/SERVICE.md)");
    if (a->output == "-")
      return Status::Error("--detach with -o -: standard output goes away with this command; give -o FILE");
  }
  if (a->attach_key.empty()) return Status::Ok();
  // The session's config was fixed when it started.
  const bool config_flags = !a->config_path.empty() || !a->events.empty() || !a->categories.empty() ||
                            a->duration_set || a->buffer_set || a->kernel_buffer_set || a->smb_set ||
                            a->bpf || a->no_compact_sched || a->ftrace_read_set ||
                            a->mode != RecordMode::kAsConfigured ||
                            a->list || a->allow_unknown_fields;
  if (config_flags)
    return Status::Error("--attach=KEY takes only -o, --stop, -q, --compress and --consumer-socket: the "
                         "session's config was set when it started (sluice sessions shows it)");
  a->daemon = true;
  return Status::Ok();
}

}  // namespace

StatusOr<RecordArgs> ParseRecordArgs(int argc, char** argv) {
  RecordArgs a;
  // Value errors start with the option as typed: "-t: bad duration 'soon'".
  auto with_name = [](const CommandLineArg& arg, const Status& s) {
    return Status::Error(arg.name + ": " + s.message());
  };
  auto handle = [&](const CommandLineArg& arg) -> Status {
    const std::string v = arg.value ? arg.value : "";
    switch (arg.id) {
      case kOperand:
        // A word without '/' that names a category is one (as Perfetto's
        // CLI takes them); anything else is an event name.
        if (v.find('/') == std::string::npos && FindAtraceCategory(v)) a.categories.push_back(v);
        else a.events.push_back(v);
        break;
      case 'o': a.output = v; break;
      case kFileLag: {
        StatusOr<uint32_t> ms = ParseDurationMs(v);
        if (!ms.ok()) return with_name(arg, ms.status());
        if (*ms < 1000)
          return with_name(arg, Status::Error("'" + std::string(v) +
                                              "' is shorter than a second, the streaming period: give 1s or more"));
        a.file_lag_ms = *ms;
        break;
      }
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
        a.kernel_buffer_set = true;
        break;
      }
      case kSmb: {
        StatusOr<uint32_t> kb = ParseProbesSmbKb(v);
        if (!kb.ok()) return with_name(arg, kb.status());
        a.smb_kb = *kb;
        a.smb_set = true;
        break;
      }
      case 'c': a.config_path = v; break;
      case kTxt: a.config_is_text = true; break;
      case kBpf: a.bpf = true; break;
      case kDaemon: a.daemon = true; break;
      case kConsumerSocket: a.consumer_socket = v; break;
      case 'q': a.quiet = true; break;
      case kCompress: {
        StatusOr<TraceCompression> c = ParseTraceCompression(v);
        if (!c.ok()) return Status::Error("--compress: " + c.status().message());
        a.compression = *c;
        a.compression_set = true;
        break;
      }
      case kNoCompactSched: a.no_compact_sched = true; break;
      case kFtraceRead:
        if (v == "auto") a.ftrace_read_mode = sluice::protos::FTRACE_READ_MODE_AUTO;
        else if (v == "mapped") a.ftrace_read_mode = sluice::protos::FTRACE_READ_MODE_MAPPED;
        else if (v == "splice") a.ftrace_read_mode = sluice::protos::FTRACE_READ_MODE_SPLICE;
        else return Status::Error(arg.name + ": '" + v + "' is not a read mode: give auto, mapped or splice");
        a.ftrace_read_set = true;
        break;
      case kList: a.list = true; break;
      case kAllowUnknownFields: a.allow_unknown_fields = true; break;
      case kStream:
      case kRing:
      case kDiscard: {
        const RecordMode mode = arg.id == kStream ? RecordMode::kStream
                                : arg.id == kRing ? RecordMode::kRing
                                                  : RecordMode::kDiscard;
        if (a.mode != RecordMode::kAsConfigured && a.mode != mode)
          return Status::Error("give one of --stream, --ring and --discard");
        a.mode = mode;
        break;
      }
      case kRotate: SLUICE_RETURN_IF_ERROR(ParseRotateValue(arg.name, v, &a.rotation)); break;
      case kKeep: {
        char* end = nullptr;
        errno = 0;
        const unsigned long n = strtoul(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno != 0 || n == 0 || n > 1000000)
          return Status::Error(arg.name + ": '" + v + "' is not a number of files from 1 to 1000000");
        a.rotation.keep = static_cast<uint32_t>(n);
        break;
      }
      case kOnRotate:
        if (v.empty()) return Status::Error(arg.name + ": give the command to run with each finished file");
        a.on_rotate = v;
        break;
      case kDetach: a.detach_key = v; break;
      case kAttach: a.attach_key = v; break;
      case kStop: a.stop = true; break;
      case 'h': return HelpRequested();
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(ParseCommandLine(argc, argv, "o:t:b:k:c:qh", kOptions, handle));
  SLUICE_RETURN_IF_ERROR(CheckRotationArgs(a));
  if (!a.config_path.empty() && (!a.events.empty() || !a.categories.empty()))
    return Status::Error("give either -c CONFIG or CATEGORIES/EVENTS, not both");
  if (!a.config_path.empty() && a.bpf)
    return Status::Error("--bpf with -c: the config says which sources run; add a linux.bpf data source to it "
                         "(docs/BPF.md)");
  if (a.daemon && a.smb_set)
    return Status::Error("--smb sizes the shared memory of sluice record's own probes; with --daemon, "
                         "sluice-probes has its own (its --smb option)");
  if (a.allow_unknown_fields && (a.config_path.empty() || !a.config_is_text))
    return Status::Error("--allow-unknown-fields applies to a text config (-c FILE --txt)");
  SLUICE_RETURN_IF_ERROR(CheckSessionControlArgs(&a));
  return a;
}

namespace {

StatusOr<std::string> ReadConfigBytes(const std::string& path) {
  if (path == "-") {
    std::string bytes;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) bytes.append(buf, n);
    if (ferror(stdin)) return Status::Error("config: cannot read standard input");
    if (bytes.empty()) return Status::Error("config: standard input is empty: pipe a TraceConfig into -c -");
    return bytes;
  }
  if (IsDirectory(path)) return Status::Error("config: " + path + " is a directory: -c takes a TraceConfig file");
  StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return Status::Error("config: " + bytes.status().message() + ": check the path");
  if (bytes->empty()) return Status::Error("config: " + path + " is empty: -c takes a TraceConfig file");
  return bytes;
}

// The mode's write_into_file and fill policies. Streaming leaves the policies
// alone: a streamed buffer is emptied into the file as it fills.
void ApplyRecordMode(RecordMode mode, TraceConfig* config) {
  config->set_write_into_file(mode == RecordMode::kStream);
  if (mode == RecordMode::kStream) return;
  for (auto& buffer : *config->mutable_buffers())
    buffer.set_fill_policy(mode == RecordMode::kRing ? TraceConfig::BufferConfig::RING_BUFFER
                                                     : TraceConfig::BufferConfig::DISCARD);
}

// -t, -b, -k and the mode on top of a config file, each said in `notes`.
Status ApplyFlagsToConfig(const RecordArgs& args, TraceConfig* config, std::vector<std::string>* notes) {
  auto note = [&](const std::string& text) {
    if (notes) notes->push_back(text);
  };
  if (args.duration_set) {
    note("-t: duration_ms " + std::to_string(config->duration_ms()) + " -> " + std::to_string(args.duration_ms));
    config->set_duration_ms(args.duration_ms);
  }
  if (args.buffer_set) {
    if (config->buffers_size() != 1) {
      return Status::Error("-b with a config of " + std::to_string(config->buffers_size()) +
                           " buffers: set each buffer's size_kb in the config");
    }
    note("-b: buffers[0].size_kb " + std::to_string(config->buffers(0).size_kb()) + " -> " +
         std::to_string(args.buffer_kb));
    config->mutable_buffers(0)->set_size_kb(static_cast<uint32_t>(args.buffer_kb));
  }
  if (args.kernel_buffer_set) {
    bool applied = false;
    for (auto& source : *config->mutable_data_sources()) {
      auto* ds = source.mutable_config();
      if (ds->name() == "linux.ftrace") {
        note("-k: " + ds->name() + " ftrace_config.buffer_size_kb " +
             std::to_string(ds->ftrace_config().buffer_size_kb()) + " -> " + std::to_string(args.kernel_buffer_kb));
        ds->mutable_ftrace_config()->set_buffer_size_kb(args.kernel_buffer_kb);
        applied = true;
      } else if (ds->name() == "linux.bpf") {
        note("-k: " + ds->name() + " bpf_config.ringbuf_size_kb " +
             std::to_string(ds->bpf_config().ringbuf_size_kb()) + " -> " + std::to_string(args.kernel_buffer_kb));
        ds->mutable_bpf_config()->set_ringbuf_size_kb(args.kernel_buffer_kb);
        applied = true;
      }
    }
    if (!applied) return Status::Error("-k: the config has no linux.ftrace or linux.bpf data source to size");
  }
  if (args.ftrace_read_set) {
    bool applied = false;
    for (auto& source : *config->mutable_data_sources()) {
      auto* ds = source.mutable_config();
      if (ds->name() != "linux.ftrace") continue;
      note("--ftrace-read: " + ds->name() + " ftrace_config.ring_buffer_read_mode " +
           sluice::protos::FtraceReadMode_Name(ds->ftrace_config().ring_buffer_read_mode()) + " -> " +
           sluice::protos::FtraceReadMode_Name(args.ftrace_read_mode));
      ds->mutable_ftrace_config()->set_ring_buffer_read_mode(args.ftrace_read_mode);
      applied = true;
    }
    if (!applied) return Status::Error("--ftrace-read: the config has no linux.ftrace data source to read");
  }
  if (args.mode != RecordMode::kAsConfigured) {
    const char* flag = args.mode == RecordMode::kStream ? "--stream" : args.mode == RecordMode::kRing ? "--ring" : "--discard";
    note(std::string(flag) + ": write_into_file " + (config->write_into_file() ? "true" : "false") + " -> " +
         (args.mode == RecordMode::kStream ? "true" : "false") +
         (args.mode == RecordMode::kStream ? "" : ", every buffer's fill_policy -> " +
                                                      std::string(args.mode == RecordMode::kRing ? "RING_BUFFER" : "DISCARD")));
    ApplyRecordMode(args.mode, config);
  }
  if (args.compression_set) {
    note("--compress: compression " + DescribeTraceCompression(TraceCompressionOf(*config)) + " -> " +
         DescribeTraceCompression(args.compression));
    SetTraceCompression(args.compression, config);
  } else if (args.rotation.enabled() && !TraceCompressionOf(*config).enabled()) {
    note("--rotate: compression none -> zstd (rotated files are compressed unless --compress none says not)");
    SetTraceCompression(RotatedFileCompression(), config);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<TraceConfig> BuildRecordConfig(const RecordArgs& args, std::vector<std::string>* notes) {
  TraceConfig config;
  if (!args.config_path.empty()) {
    const std::string name = args.config_path == "-" ? "standard input" : args.config_path;
    SLUICE_ASSIGN_OR_RETURN(std::string bytes, ReadConfigBytes(args.config_path));
    if (args.config_is_text) {
      google::protobuf::TextFormat::Parser parser;
      LineColumnErrors errors;
      parser.RecordErrorsTo(&errors);
      // Strict by default: a misspelt field would otherwise be dropped
      // without a word. Configs written for a newer Perfetto may ask to be
      // read anyway: unknown fields are then warned about and skipped.
      parser.AllowUnknownField(args.allow_unknown_fields);
      if (!parser.ParseFromString(bytes, &config)) {
        std::string message = name + ": " + errors.first();
        if (errors.first().find("has no field named") != std::string::npos)
          message += " (a field of a newer Perfetto? --allow-unknown-fields skips it with a warning)";
        else
          message += " (is it a Perfetto TraceConfig in text format?)";
        return Status::Error(message);
      }
    } else if (!config.ParseFromString(bytes)) {
      return Status::Error(name + ": not a binary TraceConfig (add --txt for a text config)");
    }
    SLUICE_RETURN_IF_ERROR(ApplyFlagsToConfig(args, &config, notes));
    return config;
  }

  auto* buffer = config.add_buffers();
  buffer->set_size_kb(static_cast<uint32_t>(args.buffer_kb));
  buffer->set_fill_policy(TraceConfig::BufferConfig::RING_BUFFER);
  // An always-on recorder (--rotate) runs until stopped unless -t says.
  config.set_duration_ms(args.rotation.enabled() && !args.duration_set ? 0 : args.duration_ms);
  ApplyRecordMode(args.mode == RecordMode::kAsConfigured ? RecordMode::kStream : args.mode, &config);

  const bool defaults = args.events.empty() && args.categories.empty();
  std::vector<std::string> events = defaults ? DefaultRecordEvents() : args.events;
  std::vector<std::string> ftrace_events, bpf_events;
  for (const std::string& e : events) {
    if (args.bpf && BpfEvents().count(e)) bpf_events.push_back(e);
    else ftrace_events.push_back(e);
  }
  if (!ftrace_events.empty() || !args.categories.empty()) {
    auto* ds = config.add_data_sources()->mutable_config();
    ds->set_name("linux.ftrace");
    auto* ftrace = ds->mutable_ftrace_config();
    for (const std::string& e : ftrace_events) ftrace->add_ftrace_events(e);
    for (const std::string& c : args.categories) ftrace->add_atrace_categories(c);
    ftrace->set_buffer_size_kb(args.kernel_buffer_kb);
    ftrace->mutable_compact_sched()->set_enabled(!args.no_compact_sched);
    if (args.ftrace_read_set) ftrace->set_ring_buffer_read_mode(args.ftrace_read_mode);
  }
  if (args.ftrace_read_set && ftrace_events.empty() && args.categories.empty())
    return Status::Error("--ftrace-read: nothing is recorded through ftrace (--bpf takes every event given)");
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
  if (args.compression_set) SetTraceCompression(args.compression, &config);
  else if (args.rotation.enabled()) SetTraceCompression(RotatedFileCompression(), &config);
  return config;
}

namespace {

// "group/name" and "group/*" of every available event, then the categories:
// what a misspelt name is compared with.
std::vector<std::string> KnownNames(const std::vector<std::string>& available) {
  std::vector<std::string> names = available;
  std::set<std::string> groups;
  for (const std::string& event : available) groups.insert(event.substr(0, event.find('/')) + "/*");
  names.insert(names.end(), groups.begin(), groups.end());
  names.emplace_back("ftrace/print");
  for (const AtraceCategory& category : AtraceCategories()) names.emplace_back(category.name);
  return names;
}

std::string UnknownNameMessage(const std::string& what, const std::string& name,
                               const std::vector<std::string>& known) {
  std::string message = "this kernel has no " + what + " '" + name + "'";
  const std::vector<std::string> nearest = NearestMatches(name, known, 3);
  if (!nearest.empty()) message += ": did you mean " + Join(nearest, ", ") + "?";
  return message + " (sluice record --list names the categories; tracefs' available_events the events)";
}

}  // namespace

Status CheckRecordEventNames(const TraceConfig& config, const std::vector<std::string>& available, bool android) {
  const std::vector<std::string> known = KnownNames(available);
  for (const auto& source : config.data_sources()) {
    if (source.config().name() != "linux.ftrace") continue;
    const auto& ftrace = source.config().ftrace_config();
    for (const std::string& event : ftrace.ftrace_events()) {
      // trace_marker's events have no enable file and are not listed.
      if (event.starts_with("ftrace/")) continue;
      std::vector<std::string> resolved, unknown;
      ResolveFtraceEvents({event}, available, &resolved, &unknown);
      if (!unknown.empty()) {
        const bool bare = event.find('/') == std::string::npos;
        return Status::Error(UnknownNameMessage(bare ? "event or category" : "event", event, known));
      }
    }
    if (android) continue;
    for (const std::string& category : ftrace.atrace_categories()) {
      if (!FindAtraceCategory(category)) return Status::Error(UnknownNameMessage("category", category, known));
    }
  }
  return Status::Ok();
}

std::string DescribeRecordCategories(const std::vector<std::string>* available) {
  std::string text;
  for (const AtraceCategory& category : AtraceCategories()) {
    char line[160];
    snprintf(line, sizeof(line), "%-14s %s\n", std::string(category.name).c_str(),
             std::string(category.description).c_str());
    text += line;
    if (category.kernel_events.empty()) {
      text += "               (user space: trace_marker writes, recorded as ftrace/print)\n";
      continue;
    }
    std::vector<std::string> events;
    if (available) {
      events = ExpandAtraceCategory(category, *available);
      events.pop_back();  // ftrace/print, which every category adds.
      if (events.empty()) {
        text += "               (none of its events in this kernel)\n";
        continue;
      }
    } else {
      events.assign(category.kernel_events.begin(), category.kernel_events.end());
    }
    // Wrapped under the description, at most 80 columns.
    std::string wrapped = "              ";
    for (const std::string& event : events) {
      if (wrapped.size() + 1 + event.size() > 80 && wrapped.size() > 14) {
        text += wrapped + "\n";
        wrapped = "              ";
      }
      wrapped += " " + event;
    }
    text += wrapped + "\n";
  }
  text += available ? "Events are those this kernel has; every category adds ftrace/print.\n"
                    : "tracefs is not readable here: the events are the full lists, whatever this kernel has.\n";
  return text;
}

namespace {

// TraceConfig and BufferConfig fields the service or the CLI acts on
// (service/tracing_service_session.cc, user/cmd/record_command.cc). Data
// sources are checked by name elsewhere (WarnAboutForeignDataSources).
const std::set<std::string>& ImplementedTraceConfigFields() {
  static const std::set<std::string> fields = {
      "buffers", "data_sources", "builtin_data_sources", "duration_ms", "write_into_file", "output_path",
      "file_write_period_ms", "max_file_size_bytes", "flush_period_ms", "flush_timeout_ms",
      "data_source_stop_timeout_ms", "deferred_start", "incremental_state_config", "trace_uuid_msb",
      "trace_uuid_lsb", "unique_session_name", "trigger_config", "compression", "compression_type",
      "sluice_rotation"};
  return fields;
}

const std::set<std::string>& ImplementedBufferFields() {
  static const std::set<std::string> fields = {"size_kb", "fill_policy"};
  return fields;
}

void AddUnknownFields(const google::protobuf::Message& message, const std::string& prefix,
                      std::vector<std::string>* out) {
  const auto& unknown = message.GetReflection()->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i)
    out->push_back(prefix + "field " + std::to_string(unknown.field(i).number()) + " (unknown to sluice)");
}

}  // namespace

std::vector<std::string> ConfigFieldsSluiceIgnores(const TraceConfig& config) {
  std::vector<std::string> ignored;
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  config.GetReflection()->ListFields(config, &fields);
  for (const auto* field : fields)
    if (!ImplementedTraceConfigFields().count(field->name())) ignored.push_back(field->name());
  AddUnknownFields(config, "", &ignored);
  for (int b = 0; b < config.buffers_size(); ++b) {
    const auto& buffer = config.buffers(b);
    const std::string prefix = "buffers[" + std::to_string(b) + "].";
    std::vector<const google::protobuf::FieldDescriptor*> buffer_fields;
    buffer.GetReflection()->ListFields(buffer, &buffer_fields);
    for (const auto* field : buffer_fields)
      if (!ImplementedBufferFields().count(field->name())) ignored.push_back(prefix + field->name());
    AddUnknownFields(buffer, prefix, &ignored);
  }
  return ignored;
}

}  // namespace sluice
