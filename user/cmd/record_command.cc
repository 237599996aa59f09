#include "user/cmd/record_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "perfetto/common/trace_stats.pb.h"
#include "service/ipc/consumer_ipc_client.h"
#include "service/event_loop.h"
#include "service/trace_file_writer.h"
#include "service/tracing_service.h"
#include "shm/base/command_line.h"
#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "shm/base/heap_retention.h"
#include "shm/base/open_files_limit.h"
#include "shm/base/wake_fd.h"
#include "user/cmd/record_config.h"
#include "user/cmd/record_fault.h"
#include "user/cmd/record_output.h"
#include "user/cmd/record_rotation_hook.h"
#include "user/cmd/record_status.h"
#include "user/cmd/session_snapshot.h"
#include "user/probes/probes_producer.h"
#include "user/probes/ftrace/ftrace_buffer_choice.h"
#include "user/probes/tracefs.h"
#include "user/probes/tracefs_readers.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"

namespace sluice {
namespace {

using perfetto::protos::TraceConfig;

std::atomic<int> g_stop_signal{0};
// Woken by a stop signal (after g_stop_signal is stored) and when a data
// source started: the main thread waits on it, without a timeout once
// nothing needs drawing, instead of looking at g_stop_signal a few times a
// second (a recorder at rest costs nothing while nothing happens). Set once,
// before the handlers are installed.
const WakeFd* g_record_wake = nullptr;
void OnStopSignal(int sig) {
  g_stop_signal.store(sig, std::memory_order_relaxed);
  if (g_record_wake) g_record_wake->Wake();
}
void WakeRecorder() {
  if (g_record_wake) g_record_wake->Wake();
}
int RecordWakeFd() { return g_record_wake ? g_record_wake->fd() : -1; }

// SIGINT, SIGTERM and SIGHUP stop the session cleanly (WaitForSessionEnd).
void InstallStopSignalHandlers() {
  // Without an eventfd the waits keep a timeout (WaitTimeoutMs).
  static const WakeFd wake = WakeFd::Create().value_or(WakeFd());
  if (wake.fd() >= 0) g_record_wake = &wake;
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// --attach with --compress: a session that wrote its file uncompressed gets
// it rewritten compressed, beside it, then renamed over it. A file that holds
// compressed packets already is left as it is (one trace, one codec).
Status CompressFileInPlace(const std::string& path, TraceCompression compression) {
  TraceFileSummary summary;
  SLUICE_RETURN_IF_ERROR(ReadTraceFile(path, [](std::string_view) {}, &summary));
  if (summary.compressed_containers > 0) return Status::Ok();
  const std::string tmp = path + ".tmp";
  ScopedFd out(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.valid()) return Status::Error("cannot create " + tmp + ": " + strerror(errno));
  TraceFileWriter writer(std::move(out), 0, compression);
  std::vector<std::string> batch;
  Status written;
  SLUICE_RETURN_IF_ERROR(ReadTraceFile(
      path,
      [&](std::string_view packet) {
        batch.emplace_back(packet);
        if (batch.size() == 1024 && written.ok()) {
          written = writer.WritePackets(batch);
          batch.clear();
        }
      },
      &summary));
  if (written.ok()) written = writer.WritePackets(batch);
  if (written.ok()) written = writer.Flush();
  if (!written.ok() || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = written.ok() ? strerror(errno) : written.message();
    unlink(tmp.c_str());  // A part-written copy would only take space (a full disk).
    return Status::Error("cannot write the compressed trace " + tmp + ": " + why + "; " + path +
                         " is left uncompressed");
  }
  return Status::Ok();
}

struct LiveFigures {
  uint64_t events = 0;
  uint64_t kernel_loss_pages = 0;
  uint64_t bpf_dropped = 0;
  uint64_t central_overwritten = 0;
  uint64_t writer_loss = 0;
  double buffer_fill = 0;
};

LiveFigures ReadLiveFigures(ConsumerEndpoint* consumer, ProbesProducer* probes) {
  LiveFigures f;
  if (probes) {
    ProbesStats c = probes->stats();
    f.events = c.ftrace_events + c.bpf_events;
    f.kernel_loss_pages = c.ftrace_lost_event_pages;
    f.bpf_dropped = c.bpf_dropped;
  }
  auto stats = consumer->GetTraceStats();
  if (stats.ok()) {
    uint64_t size = 0, held = 0;
    for (const auto& b : stats->buffer_stats()) {
      size += b.buffer_size();
      uint64_t in = b.bytes_written(), out = b.bytes_read() + b.bytes_overwritten();
      held += in > out ? in - out : 0;
      f.central_overwritten += b.chunks_overwritten() + b.chunks_discarded();
      f.writer_loss += b.trace_writer_packet_loss();
    }
    f.buffer_fill = size ? 100.0 * static_cast<double>(held) / static_cast<double>(size) : 0;
  }
  return f;
}

// Draws the status line in place: "\r", the line, and spaces over what a
// longer line before it left (record_status.h keeps it within 80 columns).
void PrintStatusLine(FILE* out, uint64_t elapsed_ms, uint64_t total_ms, const RecordOutput& output,
                     bool in_memory, const LiveFigures& now, const LiveFigures& before,
                     uint64_t interval_ms, bool have_events) {
  RecordStatus status;
  status.elapsed_ms = elapsed_ms;
  status.total_ms = total_ms;
  status.in_memory = in_memory;
  if (!in_memory) status.file_name = output.temp_path().substr(output.temp_path().rfind('/') + 1);
  struct stat st {};
  if (fstat(output.fd(), &st) == 0) status.file_bytes = static_cast<uint64_t>(st.st_size);
  status.have_events = have_events;
  status.events_per_second =
      interval_ms ? 1000.0 * static_cast<double>(now.events - before.events) / static_cast<double>(interval_ms) : 0;
  status.buffer_fill_percent = now.buffer_fill;
  status.kernel_lost_pages = now.kernel_loss_pages;
  status.bpf_dropped_records = now.bpf_dropped;
  status.smb_lost_packets = now.writer_loss;
  status.central_lost_chunks = now.central_overwritten;
  const std::string line = FormatRecordStatus(status);
  fprintf(out, "\r%-*s", static_cast<int>(kStatusLineColumns - 1), line.c_str());
  fflush(out);
}

// The summary of the trace at `path`, naming it `name`, on `out`.
void PrintSummary(FILE* out, const std::string& path, const std::string& name, const ProbesStats* counters) {
  auto health = AnalyzeTraceFile(path);
  if (!health.ok()) {
    fprintf(stderr, "sluice record: %s\n", health.status().message().c_str());
    return;
  }
  fprintf(out, "\ntrace: %s (%llu bytes, %llu packets)\n", name.c_str(),
          static_cast<unsigned long long>(health->file.bytes),
          static_cast<unsigned long long>(health->file.packets));
  if (counters) {
    fprintf(out, "events by source: ftrace %llu, bpf %llu\n",
            static_cast<unsigned long long>(counters->ftrace_events),
            static_cast<unsigned long long>(counters->bpf_events));
  }
  fprintf(out, "events in the trace: %llu", static_cast<unsigned long long>(health->ftrace_events));
  if (health->ftrace_events)
    fprintf(out, " (%.1f bytes per event)",
            static_cast<double>(health->file.bytes) / static_cast<double>(health->ftrace_events));
  fprintf(out, "\n");
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [event, n] : health->events_by_name) top.push_back({n, event});
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 8; i++)
    fprintf(out, "  %-28s %llu\n", top[i].second.c_str(), static_cast<unsigned long long>(top[i].first));
  if (health->rows.empty()) {
    fprintf(out, "losses: none\n");
  } else {
    fprintf(out, "losses and errors:\n%s", FormatHealthTable(*health).c_str());
  }
}

// Data sources sluice does not have: said once, then skipped.
void WarnAboutForeignDataSources(const TraceConfig& config) {
  const auto& hosted = ProbesProducer::DataSourceNames();
  std::set<std::string> skipped;
  for (const auto& ds : config.data_sources()) {
    const std::string& name = ds.config().name();
    if (std::find(hosted.begin(), hosted.end(), name) == hosted.end() && skipped.insert(name).second)
      fprintf(stderr, "sluice record: skipping data source %s: not available in sluice\n",
              name.c_str());
  }
}

// A streaming session writes into the recorder's file (never output_path,
// which the service would open itself) often enough that the file on disk is
// at most a second behind while events flow, and valid even if the recorder
// is killed. True if the flush period is sluice's choice (not the config's):
// it may then back off at rest, up to --file-lag, so that an unattended
// recorder is not woken every second for a trickle of events (not while the
// status line is drawn: a user watching it expects the file to keep up).
bool PrepareStreaming(TraceConfig* config) {
  if (config->file_write_period_ms() == 0) config->set_file_write_period_ms(1000);
  const bool chose_flush_period = config->flush_period_ms() == 0;
  if (chose_flush_period) config->set_flush_period_ms(config->file_write_period_ms());
  config->clear_output_path();
  return chose_flush_period;
}


// The data sources the probes will start (or report failing): what the
// "recording" line waits for. linux.system_info writes once and never runs.
size_t ExpectedRunningSources(const TraceConfig& config) {
  const auto& hosted = ProbesProducer::DataSourceNames();
  size_t n = 0;
  for (const auto& ds : config.data_sources())
    if (std::find(hosted.begin(), hosted.end(), ds.config().name()) != hosted.end() &&
        ds.config().name() != "linux.system_info")
      n++;
  return n;
}

// What records: a client of a running sluiced (--daemon: only `consumer`),
// or the service and the probes in this process.
struct Recorder {
  std::unique_ptr<EventLoopThread> loop_thread;
  std::unique_ptr<TracingService> service;
  std::unique_ptr<ProbesProducer> probes;
  std::unique_ptr<ProducerEndpoint> producer_connection;
  std::unique_ptr<ConsumerEndpoint> consumer;
  ConsumerIpcClient* daemon = nullptr;  // --daemon: `consumer`, to ask if sluiced went away.
  // CLONE_SNAPSHOT triggers: the session's key, sluiced's consumer socket,
  // and the snapshots' names (FILE.1, FILE.2, ...).
  std::string clone_key;
  std::string consumer_socket;
  std::string snapshot_base;
  uint32_t snapshots = 0;
  // --rotate: the directory of the files, and --on-rotate's runner (null
  // without one).
  std::string rotation_dir;
  RotationHook* rotation_hook = nullptr;
  std::string last_finished;  // The newest finished file's path.
};

// A rotating session finished a file: said, and handed to --on-rotate.
void TakeFinishedFiles(FILE* live, Recorder* r) {
  for (const std::string& name : r->consumer->TakeFinishedFiles()) {
    const std::string path = r->rotation_dir == "." ? name : r->rotation_dir + "/" + name;
    if (live) fputs("\n", live);
    fprintf(stderr, "sluice record: finished %s\n", path.c_str());
    if (r->rotation_hook) r->rotation_hook->Run(path);
    r->last_finished = path;
  }
}

// A CLONE_SNAPSHOT trigger fired: the session is cloned into the next
// FILE.N, on a consumer connection of its own (this one holds the session).
void WriteTriggerSnapshot(const std::string& trigger, FILE* live, Recorder* r) {
  const std::string path = r->snapshot_base + "." + std::to_string(++r->snapshots);
  StatusOr<SessionSnapshot> snapshot = WriteSessionSnapshot(r->consumer_socket, r->clone_key, path);
  if (live) fputs("\n", live);
  if (!snapshot.ok()) {
    fprintf(stderr, "sluice record: trigger '%s': no snapshot: %s\n", trigger.c_str(),
            snapshot.status().message().c_str());
    return;
  }
  fprintf(stderr, "sluice record: trigger '%s': snapshot written to %s (%llu bytes%s)\n",
          trigger.c_str(), path.c_str(), static_cast<unsigned long long>(snapshot->bytes),
          snapshot->flushed ? "" : "; a producer missed the flush, its last data may be missing");
}

Status ConnectToDaemon(const RecordArgs& args, Recorder* r) {
  auto client = ConsumerIpcClient::Connect(args.consumer_socket);
  if (!client.ok()) {
    // Attaching needs the sluiced that runs the session; a new recording
    // can do without one.
    return Status::Error(client.status().message() +
                         (args.attach_key.empty() ? "; or record without --daemon" : ""));
  }
  r->daemon = client.value().get();
  r->consumer = std::move(client.value());
  return Status::Ok();
}

Status StartInProcess(const RecordArgs& args, Recorder* r) {
  r->loop_thread = std::make_unique<EventLoopThread>();
  r->service = std::make_unique<TracingService>(r->loop_thread->loop());
  ProbesProducerOptions probe_options;
  probe_options.warn = [](const std::string& m) { fprintf(stderr, "\nsluice: %s\n", m.c_str()); };
  probe_options.on_data_source_started = WakeRecorder;
  r->probes = std::make_unique<ProbesProducer>(probe_options);
  auto connection = r->service->ConnectProducer(r->probes.get(), ProbesConnectionOptions(args.smb_kb));
  if (!connection.ok()) return connection.status();
  r->producer_connection = std::move(connection.value());
  r->probes->Connect(r->producer_connection.get());
  r->consumer = r->service->ConnectConsumer();
  return Status::Ok();
}

// How long the main thread may wait for the session's end before it has
// something to do: draw the status line (`live`: on the next second), or,
// without the wake-up eventfd, look at the stop flag.
uint32_t WaitTimeoutMs(bool live, uint64_t since_last_line_ms) {
  if (live) return static_cast<uint32_t>(since_last_line_ms >= 1000 ? 1 : 1000 - since_last_line_ms);
  return g_record_wake ? ConsumerEndpoint::kWaitForever : 250;
}

// Waits until the session ends (duration, SIGINT/SIGTERM, or an error):
// stops it on the first signal, says "recording" once every data source is
// running or failed (so scripts know when to start their workload), and
// draws the status line on a terminal. Returns the session's error, if any.
// Off a terminal the wait has no timeout: a stop signal, a started data
// source or a clone trigger wakes it (g_record_wake), so this thread costs
// nothing while the recorder is at rest.
std::string WaitForSessionEnd(const TraceConfig& config, FILE* live, const RecordOutput* output, Recorder* r) {
  const uint64_t start = NowMs();
  bool said_ready = r->probes == nullptr;
  const size_t expected_sources = ExpectedRunningSources(config);
  uint64_t last = start;
  LiveFigures before;
  bool stop_sent = false;
  std::string error;
  r->consumer->SetWaitInterruptFd(RecordWakeFd());
  for (;;) {
    if (r->consumer->WaitForTracingDisabled(WaitTimeoutMs(live, NowMs() - last), &error)) break;
    if (g_record_wake) g_record_wake->Drain();
    for (const std::string& trigger : r->consumer->TakeCloneTriggers()) WriteTriggerSnapshot(trigger, live, r);
    TakeFinishedFiles(live, r);
    if (!stop_sent && g_stop_signal.load(std::memory_order_relaxed)) {
      stop_sent = true;
      if (live) fputs("\nstopping: final flush...\n", live);
      Status s = r->consumer->DisableTracing();
      if (!s.ok()) fprintf(stderr, "sluice record: %s\n", s.message().c_str());
    }
    if (!said_ready &&
        r->probes->running_instances() + r->probes->start_errors().size() >= expected_sources) {
      fputs("sluice: recording\n", stderr);
      said_ready = true;
    }
    uint64_t now = NowMs();
    if (live && output && now - last >= 1000) {
      LiveFigures figures = ReadLiveFigures(r->consumer.get(), r->probes.get());
      PrintStatusLine(live, now - start, config.duration_ms(), *output, !config.write_into_file(), figures, before,
                      now - last, r->probes != nullptr);
      before = figures;
      last = now;
    }
  }
  if (live) fputs("\n", live);
  TakeFinishedFiles(nullptr, r);  // The last file finishes with the session.
  return error;
}

// The probes' final counters (zero with --daemon), after reporting the data
// sources that failed to start.
ProbesStats ReportProbes(const Recorder* r) {
  ProbesStats final_counters;
  if (r->probes) {
    final_counters = r->probes->stats();
    for (const std::string& e : r->probes->start_errors())
      fprintf(stderr, "sluice record: data source failed to start: %s\n", e.c_str());
  }
  return final_counters;
}

// Takes the recorder down in the order its pieces depend on each other: the
// consumer, then the probes off their connection, then the service.
void TearDown(Recorder* r) {
  (void)r->consumer->FreeBuffers();
  r->daemon = nullptr;
  r->consumer.reset();
  if (r->probes) r->probes->Disconnect();
  r->producer_connection.reset();
  r->probes.reset();
  r->service.reset();
  r->loop_thread.reset();
}

// The end of a recording whose session is over: a fault is said in one line
// (keeping what was recorded), else the file is compressed if asked,
// summarised and put in place. The exit status.
int FinishRecording(const RecordArgs& args, const std::string& error, bool service_gone,
                    RecordOutput* output, FILE* info, const ProbesStats* counters) {
  const std::string& name = output->path();
  if (!error.empty()) {
    // The service is gone (in-process: destroyed; --daemon: the session is
    // over or sluiced is dead), so nothing writes the file any more.
    RecordFileState file = CutToLastWholePacket(output->fd());
    if (file.summary.packets == 0) {
      fprintf(stderr, "sluice record: %s\n", DescribeSessionFault(name, error, service_gone, file).c_str());
      if (!output->to_stdout() && PathExists(name))
        fprintf(stderr, "sluice record: nothing was recorded; %s was left as it was\n", name.c_str());
      return 1;  // ~RecordOutput removes the empty file.
    }
    const std::string kept = output->KeepPartial();
    std::string line = DescribeSessionFault(kept, error, service_gone, file);
    if (kept != name)
      line += output->to_stdout() ? "; nothing was written to standard output"
                                  : "; " + name + " was left as it was";
    fprintf(stderr, "sluice record: %s\n", line.c_str());
    PrintSummary(info, kept, kept, counters);
    return 1;
  }
  output->Close();
  // The session's config says how its file is compressed; --attach may ask
  // for it afterwards.
  if (!args.attach_key.empty() && args.compression.enabled()) {
    Status s = CompressFileInPlace(output->temp_path(), args.compression);
    if (!s.ok()) fprintf(stderr, "sluice record: --compress: %s\n", s.message().c_str());
  }
  // Summarised before it is put in place: a trace sent to standard output
  // cannot be read back.
  PrintSummary(info, output->temp_path(), output->display_name(), counters);
  if (Status committed = output->Commit(); !committed.ok()) {
    fprintf(stderr, "sluice record: %s\n", committed.message().c_str());
    return 1;
  }
  return 0;
}

// --detach: the session goes on in sluiced, which writes its file; this run
// leaves the temporary file to it and ends.
int DetachSession(const RecordArgs& args, RecordOutput* output, Recorder* recorder) {
  Status detached = recorder->consumer->Detach(args.detach_key);
  if (!detached.ok()) {
    fprintf(stderr, "sluice record: %s\n", detached.message().c_str());
    TearDown(recorder);  // The session was ours still: it ends.
    return 1;
  }
  output->LeaveToDetachedSession();
  recorder->daemon = nullptr;
  recorder->consumer.reset();  // Detached: nothing to free.
  fprintf(stderr,
          "sluice record: session '%s' runs in sluiced, writing %s; sluice record --attach=%s "
          "[--stop] takes it back and puts the trace at %s (sluice sessions lists it)\n",
          args.detach_key.c_str(), output->temp_path().c_str(), args.detach_key.c_str(),
          output->path().c_str());
  return 0;
}

// --attach=KEY: the detached session becomes this run's, as if it had started
// it; sluiced still writes its file, which this run puts in place at the end.
int RunAttached(const RecordArgs& args) {
  Recorder recorder;
  if (Status connected = ConnectToDaemon(args, &recorder); !connected.ok()) {
    fprintf(stderr, "sluice record: %s\n", connected.message().c_str());
    return 1;
  }
  StatusOr<AttachedSession> attached = recorder.consumer->Attach(args.attach_key);
  if (!attached.ok()) {
    fprintf(stderr, "sluice record: %s\n", attached.status().message().c_str());
    return 1;
  }
  const SessionInfo& session = attached->info;
  const std::string path = args.output.empty() ? session.output_path : args.output;
  if (path.empty() || session.output_temp_path.empty()) {
    fprintf(stderr,
            "sluice record: session '%s' was not detached by sluice record: its file is where its "
            "client put it; attached only to %s it\n",
            args.attach_key.c_str(), args.stop ? "stop" : "wait for");
  }
  std::unique_ptr<RecordOutput> output;
  if (!path.empty() && !session.output_temp_path.empty()) {
    auto adopted = RecordOutput::Adopt(path, session.output_temp_path);
    if (!adopted.ok()) {
      fprintf(stderr, "sluice record: %s\n", adopted.status().message().c_str());
      (void)recorder.consumer->Detach("");  // Leave it as it was.
      return 1;
    }
    output = std::move(adopted.value());
  }
  InstallStopSignalHandlers();
  FILE* info = output && output->to_stdout() ? stderr : stdout;
  fprintf(stderr, "sluice record: attached to session '%s' (%s)\n", args.attach_key.c_str(),
          session.state == SessionInfo::State::kEnded ? "it ended while detached"
          : args.stop                                 ? "stopping it"
                                                      : "Ctrl-C stops it");
  if (args.stop && session.state != SessionInfo::State::kEnded) {
    if (Status stopped = recorder.consumer->DisableTracing(); !stopped.ok())
      fprintf(stderr, "sluice record: %s\n", stopped.message().c_str());
  }
  FILE* live = output && !args.quiet && isatty(fileno(info)) ? info : nullptr;
  std::string error;
  if (output) {
    error = WaitForSessionEnd(attached->config, live, output.get(), &recorder);
  } else {
    recorder.consumer->SetWaitInterruptFd(RecordWakeFd());
    while (!recorder.consumer->WaitForTracingDisabled(WaitTimeoutMs(false, 0), &error)) {
      if (g_record_wake) g_record_wake->Drain();
      if (g_stop_signal.load(std::memory_order_relaxed)) (void)recorder.consumer->DisableTracing();
    }
  }
  const bool service_gone = recorder.daemon && recorder.daemon->connection_lost();
  TearDown(&recorder);
  if (error.starts_with(kNoTriggerError)) {
    // Not a fault: the session waited for a trigger that never came, and
    // sluiced wrote nothing into its file (an empty one is removed).
    struct stat st {};
    if (output && stat(output->temp_path().c_str(), &st) == 0 && st.st_size == 0)
      unlink(output->temp_path().c_str());
    fprintf(stderr, "sluice record: session '%s': %s%s\n", args.attach_key.c_str(), error.c_str(),
            output ? ("; " + output->display_name() + " was not written").c_str() : "");
    return 3;
  }
  if (!output) {
    if (!error.empty()) fprintf(stderr, "sluice record: session '%s': %s\n", args.attach_key.c_str(), error.c_str());
    return error.empty() ? 0 : 1;
  }
  return FinishRecording(args, error, service_gone, output.get(), info, nullptr);
}

// An ftrace source that another tracer's reading of the top-level buffer
// would refuse (ftrace_buffer_choice.h) is refused here, before anything
// starts and before a file is made: the probes would skip it and record
// the rest, which is not what was asked for.
Status CheckOtherTracers(const TraceConfig& config) {
  StatusOr<std::unique_ptr<Tracefs>> tracefs = Tracefs::Open(TracefsOptions{});
  if (!tracefs.ok()) return Status::Ok();  // The probes say what is wrong.
  const bool copies = access(((*tracefs)->root() + "/options/copy_trace_marker").c_str(), F_OK) == 0;
  const std::vector<TracefsReader> readers = ReadersOfInstance(FindTracefsReaders(getpid()), "");
  if (readers.empty()) return Status::Ok();
  for (const auto& source : config.data_sources()) {
    if (source.config().name() != "linux.ftrace") continue;
    StatusOr<FtraceBufferChoice> choice = ChooseFtraceBuffer(source.config().ftrace_config(), readers, copies, "");
    if (!choice.ok()) return choice.status();
  }
  return Status::Ok();
}

// --rotate: the service cuts the trace into files in -o's directory and
// names them (service/trace_file_rotation.h); this run hands each finished
// one to --on-rotate and waits for the end as a streaming recording does.
int RecordRotating(const RecordArgs& args, TraceConfig config, bool may_rest) {
  if (!config.write_into_file()) {
    fprintf(stderr, "sluice record: --rotate cuts a trace written while recording: the config keeps it in "
                    "memory (write_into_file is false); drop --rotate or record with --stream\n");
    return 2;
  }
  const std::filesystem::path out(args.output);
  FileRotationOptions rotation = args.rotation;
  const std::string file_name = out.filename().string();
  const size_t dot = file_name.rfind('.');
  rotation.stem = dot == std::string::npos || dot == 0 ? file_name : file_name.substr(0, dot);
  rotation.extension = dot == std::string::npos || dot == 0 ? "" : file_name.substr(dot);
  if (rotation.stem.empty()) {
    fprintf(stderr, "sluice record: --rotate: -o %s names no file: give -o DIR/NAME.pftrace\n", args.output.c_str());
    return 2;
  }
  const std::string dir = out.has_parent_path() ? out.parent_path().string() : ".";
  ScopedFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) {
    fprintf(stderr, "sluice record: --rotate: cannot open the directory %s: %s; create it or pick another -o\n",
            dir.c_str(), ErrnoMessage(errno).c_str());
    return 1;
  }
  InstallStopSignalHandlers();
  Recorder recorder;
  recorder.rotation_dir = dir;
  Status connected = args.daemon ? ConnectToDaemon(args, &recorder) : StartInProcess(args, &recorder);
  if (!connected.ok()) {
    fprintf(stderr, "sluice record: %s\n", connected.message().c_str());
    return 1;
  }
  SessionOptions session;
  session.rotation = rotation;
  if (may_rest) session.rest_flush_period_ms = args.file_lag_ms;
  if (args.daemon) {
    session.key = args.detach_key;
    session.output_path = std::filesystem::absolute(out).string();
  }
  std::unique_ptr<RotationHook> hook;
  if (!args.on_rotate.empty()) {
    hook = std::make_unique<RotationHook>(args.on_rotate);
    recorder.rotation_hook = hook.get();
  }
  Status enabled = recorder.consumer->EnableTracing(config, dir_fd.get(), session);
  if (!enabled.ok()) {
    fprintf(stderr, "sluice record: %s\n", enabled.message().c_str());
    TearDown(&recorder);
    return 1;
  }
  const std::string pattern = (dir == "." ? "" : dir + "/") + rotation.stem + ".NNNNNN" + rotation.extension;
  if (!args.detach_key.empty()) {
    Status detached = recorder.consumer->Detach(args.detach_key);
    if (!detached.ok()) {
      fprintf(stderr, "sluice record: %s\n", detached.message().c_str());
      TearDown(&recorder);
      return 1;
    }
    recorder.daemon = nullptr;
    recorder.consumer.reset();
    fprintf(stderr, "sluice record: session '%s' runs in sluiced, writing %s; sluice record --attach=%s --stop "
                    "stops it\n", args.detach_key.c_str(), pattern.c_str(), args.detach_key.c_str());
    return 0;
  }
  std::string every;
  if (rotation.max_bytes) every = std::to_string(rotation.max_bytes >> 10) + " KiB";
  if (rotation.max_ms) every += (every.empty() ? "" : " or ") + std::to_string(rotation.max_ms / 1000) + " s";
  fprintf(stderr, "sluice record: writing %s, a new file every %s%s\n", pattern.c_str(), every.c_str(),
          config.duration_ms() ? "" : "; Ctrl-C or SIGTERM stops");
  std::string error = WaitForSessionEnd(config, nullptr, nullptr, &recorder);
  ProbesStats counters = ReportProbes(&recorder);
  (void)counters;
  TearDown(&recorder);
  if (hook) {
    hook->Finish();
    if (hook->failures())
      fprintf(stderr, "sluice record: --on-rotate failed for %llu of %llu files\n",
              static_cast<unsigned long long>(hook->failures()), static_cast<unsigned long long>(hook->runs()));
  }
  if (!error.empty()) {
    // A write error names the file it hit: the last one, finished as far
    // as it got.
    if (error.starts_with(kTraceFileErrorPrefix) && !recorder.last_finished.empty())
      error = recorder.last_finished + ": " + error.substr(kTraceFileErrorPrefix.size());
    fprintf(stderr, "sluice record: %s; the files before it are whole traces\n", error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int RunRecordCommand(int argc, char** argv) {
  RetainFreedHeap();  // Before the service's and the readers' threads start.
  RaiseOpenFilesLimit();  // Four fds per CPU: past 1024 on a 256-CPU server.
  auto parsed = ParseRecordArgs(argc, argv);
  if (!parsed.ok()) return CommandLineExit(parsed.status(), "sluice record", kRecordUsage);
  RecordArgs args = std::move(parsed.value());
  if (!args.attach_key.empty()) return RunAttached(args);
  // What this kernel has, when tracefs is readable here (with --daemon as a
  // plain user it may not be: sluice-probes then warns about unknown names).
  std::optional<std::vector<std::string>> available;
  if (StatusOr<std::unique_ptr<Tracefs>> tracefs = Tracefs::Open(TracefsOptions{}); tracefs.ok()) {
    if (auto events = (*tracefs)->ReadAvailableEvents(); events.ok()) available = std::move(*events);
  }
  if (args.list) {
    fputs(DescribeRecordCategories(available ? &*available : nullptr).c_str(), stdout);
    return 0;
  }
  std::vector<std::string> notes;
  auto built = BuildRecordConfig(args, &notes);
  if (!built.ok()) {
    fprintf(stderr, "sluice record: %s\n", built.status().message().c_str());
    return 2;
  }
  TraceConfig config = std::move(built.value());
  if (Status rotation = ApplyConfigRotation(&args, &config, &notes); !rotation.ok()) {
    fprintf(stderr, "sluice record: %s\n", rotation.message().c_str());
    return 2;
  }
  for (const std::string& note : notes) fprintf(stderr, "sluice record: %s\n", note.c_str());
  if (available) {
    const bool android = access("/system/bin/atrace", X_OK) == 0;
    if (Status names = CheckRecordEventNames(config, *available, android); !names.ok()) {
      fprintf(stderr, "sluice record: %s\n", names.message().c_str());
      return 2;
    }
    if (Status others = CheckOtherTracers(config); !others.ok()) {
      fprintf(stderr, "sluice record: %s\n", others.message().c_str());
      return 2;
    }
  }
  if (args.output.empty()) args.output = config.output_path();
  if (args.output.empty()) {
    fprintf(stderr, "sluice record: no output file: give -o FILE (or -o - for standard output)\n");
    return 2;
  }
  WarnAboutForeignDataSources(config);
  for (const std::string& field : ConfigFieldsSluiceIgnores(config))
    fprintf(stderr, "sluice record: config field %s is not implemented by sluice: ignored\n", field.c_str());
  const bool streaming = config.write_into_file();
  using TriggerConfig = TraceConfig::TriggerConfig;
  const TriggerConfig& triggers = config.trigger_config();
  const bool snapshot_on_trigger =
      config.has_trigger_config() &&
      (triggers.trigger_mode() == TriggerConfig::CLONE_SNAPSHOT ||
       (triggers.trigger_mode() == TriggerConfig::STOP_TRACING && triggers.use_clone_snapshot_if_available()));
  if (config.has_trigger_config() && !args.daemon) {
    fprintf(stderr, "sluice record: the config's trigger_config needs sluiced: record with --daemon "
                    "(sluice trigger reaches sessions through sluiced)\n");
    return 2;
  }
  if (snapshot_on_trigger && args.output == "-") {
    fprintf(stderr, "sluice record: CLONE_SNAPSHOT triggers write FILE.1, FILE.2, ...: give -o FILE, "
                    "not -o -\n");
    return 2;
  }
  config.clear_output_path();  // The recorder's file is given to the service as an fd.
  const bool may_rest = streaming && PrepareStreaming(&config);
  if (args.rotation.enabled()) return RecordRotating(args, config, may_rest);

  // Nothing at -o is touched until the recording ends (record_output.h).
  auto created = RecordOutput::Create(args.output);
  if (!created.ok()) {
    fprintf(stderr, "sluice record: %s\n", created.status().message().c_str());
    return 1;
  }
  std::unique_ptr<RecordOutput> output = std::move(created.value());
  // With -o - standard output carries the trace: everything else goes to stderr.
  FILE* info = output->to_stdout() ? stderr : stdout;
  InstallStopSignalHandlers();

  Recorder recorder;
  Status connected = args.daemon ? ConnectToDaemon(args, &recorder) : StartInProcess(args, &recorder);
  if (!connected.ok()) {
    fprintf(stderr, "sluice record: %s\n", connected.message().c_str());
    return 1;
  }
  // The service dups the fd of a streaming session; an in-memory one is
  // read at the end, below. sluiced gets the fd of an in-memory session
  // too: it writes the trace there itself if this run is killed (or
  // detaches) before the end (docs/SERVICE.md, "Detach, attach and clone").
  SessionOptions session;
  const bool live_line = !args.quiet && isatty(fileno(info)) && args.detach_key.empty();
  if (may_rest && !live_line) session.rest_flush_period_ms = args.file_lag_ms;
  if (args.daemon) {
    session.key = args.detach_key;
    session.output_path = output->to_stdout() ? "-" : std::filesystem::absolute(output->path()).string();
    session.output_temp_path = std::filesystem::absolute(output->temp_path()).string();
    if (snapshot_on_trigger) {
      // Snapshots clone the session by name: it needs one.
      if (session.key.empty() && config.unique_session_name().empty())
        session.key = "sluice-record-" + std::to_string(getpid());
      recorder.clone_key = session.key.empty() ? config.unique_session_name() : session.key;
      recorder.consumer_socket = args.consumer_socket;
      recorder.snapshot_base = output->path();
    }
  }
  Status enabled =
      recorder.consumer->EnableTracing(config, streaming || args.daemon ? output->fd() : -1, session);
  if (!enabled.ok()) {
    fprintf(stderr, "sluice record: %s\n", enabled.message().c_str());
    TearDown(&recorder);
    return 1;
  }
  if (!args.detach_key.empty()) return DetachSession(args, output.get(), &recorder);
  if (streaming) {
    fprintf(stderr, "sluice record: writing %s (%s %s at the end)\n", output->temp_path().c_str(),
            output->to_stdout() ? "copied to" : "renamed to", output->display_name().c_str());
  } else {
    fprintf(stderr, "sluice record: %s buffer in memory, written to %s when recording ends\n",
            config.buffers(0).fill_policy() == TraceConfig::BufferConfig::DISCARD ? "discard (oldest data kept)"
                                                                                 : "ring (newest data kept)",
            output->display_name().c_str());
  }
  FILE* live = !args.quiet && isatty(fileno(info)) ? info : nullptr;
  std::string error = WaitForSessionEnd(config, live, output.get(), &recorder);
  const bool service_gone = recorder.daemon && recorder.daemon->connection_lost();
  if (error.starts_with(kNoTriggerError)) {
    // Not a fault: the trigger the session waited for never came.
    TearDown(&recorder);
    fprintf(stderr, "sluice record: %s; %s was %s\n", error.c_str(), output->display_name().c_str(),
            output->to_stdout() ? "not written to" : "not written");
    return 3;  // ~RecordOutput removes the temporary file.
  }
  if (!streaming && !service_gone) {
    Status read = ReadBuffersIntoFile(recorder.consumer.get(), output->fd(), config.max_file_size_bytes(),
                                      TraceCompressionOf(config));
    if (!read.ok() && error.empty()) error = read.message();
  }
  ProbesStats final_counters = ReportProbes(&recorder);
  TearDown(&recorder);
  return FinishRecording(args, error, service_gone, output.get(), info,
                         args.daemon ? nullptr : &final_counters);
}

}  // namespace sluice
