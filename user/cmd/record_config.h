// `sluice record`'s command line and the TraceConfig it stands for, kept
// apart from running the recording (record_command.h): the flags, the default
// events, the config file given with -c, or the default config built from
// the flags. Nothing here touches the kernel or the service.
#ifndef SLUICE_USER_CMD_RECORD_CONFIG_H_
#define SLUICE_USER_CMD_RECORD_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "perfetto/config/trace_config.pb.h"
#include "sluice/ftrace.pb.h"
#include "service/packet_compressor.h"
#include "service/trace_file_rotation.h"
#include "shm/base/status.h"

namespace sluice {

// How the central buffer reaches the file (Perfetto's write_into_file and
// fill_policy).
enum class RecordMode {
  kAsConfigured,  // -c: as the config says; without -c: kStream.
  kStream,        // write_into_file: written while recording.
  kRing,          // RING_BUFFER in memory, the newest data written at the end.
  kDiscard,       // DISCARD in memory, the oldest data written at the end.
};

struct RecordArgs {
  std::string output;
  uint32_t duration_ms = 10000;
  bool duration_set = false;
  uint64_t buffer_kb = 64 * 1024;
  bool buffer_set = false;
  uint32_t kernel_buffer_kb = 2048;  // Per CPU.
  bool kernel_buffer_set = false;
  uint32_t smb_kb = 8 * 1024;        // Producer shared memory (kDefaultProbesSmbKb).
  bool smb_set = false;
  std::string config_path;           // "-": standard input
  bool config_is_text = false;
  bool allow_unknown_fields = false;  // Text configs: unknown fields warn instead of failing.
  bool bpf = false;
  bool daemon = false;
  bool quiet = false;
  // --compress: the file's compression (TraceConfig.compression), set on
  // the config; with --attach, applied to the finished file if the session
  // wrote it uncompressed.
  TraceCompression compression;
  bool compression_set = false;
  bool no_compact_sched = false;
  // --ftrace-read: FtraceConfig.ring_buffer_read_mode of linux.ftrace.
  sluice::protos::FtraceReadMode ftrace_read_mode = sluice::protos::FTRACE_READ_MODE_AUTO;
  bool ftrace_read_set = false;
  std::string consumer_socket = "/run/sluice/consumer.sock";
  std::vector<std::string> events;      // "group/name", "group/*" or a bare event name
  std::vector<std::string> categories;  // atrace categories given as words: sched, freq, ...
  bool list = false;                    // --list: print the categories and exit
  RecordMode mode = RecordMode::kAsConfigured;  // --stream, --ring, --discard
  std::string detach_key;               // --detach=KEY (needs --daemon)
  std::string attach_key;               // --attach=KEY (implies --daemon)
  bool stop = false;                    // --stop, with --attach
  // --file-lag: how far behind a streamed file may fall while the machine
  // is at rest (SessionOptions.rest_flush_period_ms); at most a second while
  // events flow or the status line is drawn. Five minutes: a flush round
  // costs about half a millisecond of CPU beyond its events here (three
  // threads woken with cold caches), so at one a minute a file at rest cost
  // twice what trace-cmd does; trace-cmd's own file lags until a CPU's
  // buffer is half full, several minutes at rest (docs/PERFORMANCE.md,
  // "Sluice at rest").
  uint32_t file_lag_ms = 5 * 60 * 1000;
  // --rotate SIZE|DURATION (each at most once), --keep N: the trace cut into
  // files that each load alone (service/trace_file_rotation.h). --on-rotate
  // CMD: run with each finished file's path (record_rotation_hook.h).
  FileRotationOptions rotation;
  std::string on_rotate;
};

StatusOr<RecordArgs> ParseRecordArgs(int argc, char** argv);

// A -c config's sluice_rotation (protos/sluice/rotation_config.proto) becomes
// args->rotation unless --rotate was given (--keep still wins over its
// keep_files), with the checks --rotate gets, and the default compression of
// rotated files on `config`. --keep and --on-rotate without either are
// refused here. Notes say what changed.
Status ApplyConfigRotation(RecordArgs* args, perfetto::protos::TraceConfig* config,
                           std::vector<std::string>* notes = nullptr);

// The TraceConfig that `args` stand for: the file given with -c ("-": stdin;
// parse errors, unknown fields included, name line and column), or the
// default config built from the flags. With -c, the flags that change a
// config (-t, -b, -k, --ftrace-read, --stream/--ring/--discard, --compress) are applied
// on top of it,
// each with a line in `notes` saying what it replaced; --bpf is refused (the
// config says which sources run).
StatusOr<perfetto::protos::TraceConfig> BuildRecordConfig(const RecordArgs& args,
                                                          std::vector<std::string>* notes = nullptr);

// The default ftrace events when none are given.
const std::vector<std::string>& DefaultRecordEvents();

// Refuses, before anything starts, ftrace events and atrace categories of
// `config` that this kernel does not have (`available`: tracefs'
// available_events as "group/name"), naming the nearest known names. On
// Android, atrace may know vendor categories: unknown categories pass there.
Status CheckRecordEventNames(const perfetto::protos::TraceConfig& config,
                             const std::vector<std::string>& available, bool android);

// The fields of `config` that sluice does not act on, by name
// ("compression_type", "buffers[1].transfer_on_clone", "trigger_config"), and
// fields a binary config holds that sluice's protos do not know ("field 203"):
// what `sluice record` warns about at start, so nothing is ignored silently.
std::vector<std::string> ConfigFieldsSluiceIgnores(const perfetto::protos::TraceConfig& config);

// `sluice record --list`: the categories, and the events behind each; with
// `available`, only those this kernel has, and how many it lacks.
std::string DescribeRecordCategories(const std::vector<std::string>* available);

// `sluice record --help`.
extern const char kRecordUsage[];

}  // namespace sluice

#endif  // SLUICE_USER_CMD_RECORD_CONFIG_H_
