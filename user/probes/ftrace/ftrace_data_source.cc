#include "user/probes/ftrace/ftrace_data_source.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "perfetto/trace/ftrace/ftrace_stats.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/rest_flush_period.h"
#include "shm/base/clock.h"
#include "user/probes/ftrace/ftrace_cpu_stats.h"
#include "user/probes/tracefs_readers.h"
#include "user/probes/ftrace/ftrace_watermark.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceStats;
using perfetto::protos::TracePacket;
using Clock = std::chrono::steady_clock;

// drain_period_ms left unset: upstream's 100 ms where the deadline is a
// reader's only wake-up (no buffer_percent, before Linux 5.1). Where the
// kernel wakes a reader at its buffer's watermark, that wake-up keeps the
// buffer from filling, and a deadline would only bound how long a slowly
// filling buffer's events wait in the kernel. The session's flushes do that
// already where it matters (a streaming file: sluice record's periodic
// flush, which backs off at rest; a ring buffer needs its data only at the
// end or a clone, both of which flush), so no deadline: a reader at rest
// sleeps until its watermark, as trace-cmd's do (docs/PERFORMANCE.md,
// "Sluice at rest"). A config that sets drain_period_ms gets it.
constexpr uint32_t kDefaultDrainPeriodMs = 100;
constexpr uint32_t kWatermarkDrainPeriodMs = 0;
constexpr uint32_t kMaxDrainPeriodMs = 60 * 1000;
// The housekeeping period at rest grows to this many times the configured
// one: 8 min by default (DrainLoop).
constexpr uint32_t kHousekeepingRestFactor = 16;

// The machine's memory, for the kernel buffer's default size.
uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace

uint32_t KernelBufferKbFor(const perfetto::protos::FtraceConfig& config, uint64_t physical_memory_bytes) {
  constexpr uint64_t kHighMemoryBytes = 7ull << 30;
  const uint32_t default_kb = physical_memory_bytes >= kHighMemoryBytes ? 8 * 1024 : 2 * 1024;
  const uint32_t requested = config.buffer_size_kb();
  if (requested == 0 || (config.buffer_size_lower_bound() && requested < default_kb)) return default_kb;
  return requested;
}

FtraceDataSource::FtraceDataSource(const perfetto::protos::FtraceConfig& config,
                                   std::function<std::unique_ptr<TraceWriter>()> make_writer,
                                   const FtraceDataSourceOptions& options)
    : config_(config), make_writer_(std::move(make_writer)), options_(options) {
  drain_period_ms_ = config.drain_period_ms() == 0 ? kDefaultDrainPeriodMs
                                                  : std::min(config.drain_period_ms(), kMaxDrainPeriodMs);
  read_mode_ = config.ring_buffer_read_mode();
  paused_.store(options.start_reading_paused, std::memory_order_relaxed);
}

StatusOr<std::unique_ptr<FtraceDataSource>> FtraceDataSource::Create(
    const perfetto::protos::FtraceConfig& config,
    std::function<std::unique_ptr<TraceWriter>()> make_writer,
    const FtraceDataSourceOptions& options) {
  if (!make_writer) return Status::Error("FtraceDataSource needs a TraceWriter factory");
  if (config.drain_buffer_percent() > 100) {
    return Status::Error("linux.ftrace: drain_buffer_percent " + std::to_string(config.drain_buffer_percent()) +
                         " is not a percent: give 1-100 (how full a CPU's buffer gets before its reader "
                         "wakes), or leave it out for the kernel's 50");
  }
  SLUICE_ASSIGN_OR_RETURN(const FtraceBufferChoice buffer, ChooseBuffer(config, options));
  std::unique_ptr<FtraceDataSource> ds(new FtraceDataSource(config, std::move(make_writer), options));
  ds->buffer_choice_ = buffer;
  if (!buffer.reason.empty()) ds->AddWarning(buffer.reason);
  for (const std::string& warning : FtraceOptionsNotApplied(config)) ds->AddWarning(warning);
  TracefsOptions fs_options;
  fs_options.root = options.tracefs_root;
  fs_options.instance_name = buffer.instance_name;
  fs_options.allow_mount = options.allow_mount;
  fs_options.cpu_online_path = options.cpu_online_path;
  FtraceSettingsOptions control_options = options.control;
  if (!options.tracefs_state_dir.empty()) {
    auto file = TracefsStateFile::Create(options.tracefs_state_dir);
    if (file.ok()) {
      ds->state_file_ = std::move(file).value();
      control_options.state_file = ds->state_file_.get();
    } else {
      ds->AddWarning("no tracefs state file (" + file.status().message() +
                     "): if this process is killed, tracefs stays as it changed it");
    }
  }
  if (ds->state_file_ && !buffer.instance_name.empty()) {
    // The instance is the first change: saved before Open() makes it.
    auto root = FindTracefsRoot(fs_options);
    if (root.ok() && !IsDirectory(*root + "/instances/" + buffer.instance_name)) {
      TracefsChanges creating;
      creating.tracefs_root = *root;
      creating.instance_name = buffer.instance_name;
      creating.created_instance = true;
      if (Status st = ds->state_file_->Save(creating); !st.ok()) {
        ds->AddWarning("cannot keep the tracefs state file (" + st.message() +
                       "): if this process is killed, tracefs stays as it changed it");
      }
    }
  }
  auto tracefs = Tracefs::Open(fs_options);
  if (!tracefs.ok()) {
    if (ds->state_file_) (void)ds->state_file_->Save({});
    return tracefs.status();
  }
  ds->tracefs_ = std::move(tracefs).value();
  if (buffer.copy_trace_marker) {
    // The instance is ours (made just now), so the option goes with it.
    if (Status st = ds->tracefs_->Write("options/copy_trace_marker", "1"); !st.ok()) {
      return Status::Error("cannot have instance " + buffer.instance_name + " copy trace_marker writes (" +
                           st.message() + "): stop the other tracer, or record without ftrace/print");
    }
  }

  FtraceSettingsConfig control;
  control.events.assign(config.ftrace_events().begin(), config.ftrace_events().end());
  control.atrace_categories.assign(config.atrace_categories().begin(),
                                   config.atrace_categories().end());
  control.atrace_apps.assign(config.atrace_apps().begin(), config.atrace_apps().end());
  control.buffer_size_kb = KernelBufferKbFor(config, PhysicalMemoryBytes());
  control.preserve_buffer = config.preserve_ftrace_buffer();
  control.buffer_percent = config.drain_buffer_percent();
  control.throttle_rss_stat = config.throttle_rss_stat();
  control.disable_generic_events = config.disable_generic_events();
  using KprobeType = perfetto::protos::FtraceConfig::KprobeEvent;
  for (const auto& k : config.kprobe_events()) {
    FtraceKprobe probe;
    probe.function = k.probe();
    probe.entry = k.type() == KprobeType::KPROBE_TYPE_KPROBE || k.type() == KprobeType::KPROBE_TYPE_BOTH;
    probe.exit = k.type() == KprobeType::KPROBE_TYPE_KRETPROBE || k.type() == KprobeType::KPROBE_TYPE_BOTH;
    if (probe.entry || probe.exit) control.kprobes.push_back(std::move(probe));
  }
  ds->settings_ = std::make_unique<FtraceSettings>(ds->tracefs_.get(), std::move(control),
                                                       control_options);
  return ds;
}

std::vector<std::string> FtraceOptionsNotApplied(const perfetto::protos::FtraceConfig& config) {
  std::vector<std::string> out;
  auto note = [&out](bool set, const char* option, const char* instead) {
    if (set) out.push_back(std::string("ftrace option ") + option + " is not carried out by sluice: " + instead);
  };
  const bool function_graph = config.enable_function_graph() || config.function_filters_size() > 0 ||
                              config.function_graph_roots_size() > 0 || config.function_graph_max_depth() > 0;
  note(function_graph, "enable_function_graph (and its filters)",
       "no function_graph tracer runs, so the trace has no funcgraph events");
  note(config.symbolize_ksyms(), "symbolize_ksyms", "kernel addresses (sched_blocked_reason's caller) stay addresses");
  note(config.syscall_events_size() > 0, "syscall_events", "raw_syscalls events, if enabled, record every syscall");
  note(config.tids_to_trace_size() > 0, "tids_to_trace", "events of every task are recorded");
  note(!config.tracing_cpumask().empty(), "tracing_cpumask", "every CPU is traced");
  note(config.tracefs_options_size() > 0, "tracefs_options", "tracefs options stay as they are");
  note(config.has_print_filter(), "print_filter", "every ftrace/print event is recorded");
  note(config.use_monotonic_raw_clock(), "use_monotonic_raw_clock", "the trace clock stays boot");
  note(config.atrace_userspace_only() || config.atrace_categories_prefer_sdk_size() > 0,
       "atrace_userspace_only / atrace_categories_prefer_sdk", "atrace categories enable their kernel events too");
  return out;
}

// Another tracer reading the top-level buffer moves the session to an
// instance of its own, or refuses it (ftrace_buffer_choice.h). Only on the
// machine's tracefs: a test's fake tree has no readers.
StatusOr<FtraceBufferChoice> FtraceDataSource::ChooseBuffer(const perfetto::protos::FtraceConfig& config,
                                                           const FtraceDataSourceOptions& options) {
  if (!options.tracefs_root.empty() || !config.instance_name().empty() || !options.avoid_other_tracers) {
    FtraceBufferChoice as_configured;
    as_configured.instance_name = config.instance_name();
    return as_configured;
  }
  TracefsOptions fs_options;
  fs_options.allow_mount = options.allow_mount;
  auto root = FindTracefsRoot(fs_options);
  if (!root.ok()) return root.status();
  static std::atomic<uint32_t> own_instances{0};
  const std::string own_name = "sluice-" + std::to_string(getpid()) + "-" +
                               std::to_string(own_instances.fetch_add(1, std::memory_order_relaxed));
  return ChooseFtraceBuffer(config, ReadersOfInstance(FindTracefsReaders(getpid()), ""),
                            access((*root + "/options/copy_trace_marker").c_str(), F_OK) == 0, own_name);
}

FtraceDataSource::~FtraceDataSource() {
  if (started_) Stop();
  {
    // Joins any reader left by a failed Start() and closes its files: an
    // instance with open files cannot be removed.
    std::lock_guard<std::mutex> lock(readers_mutex_);
    cpus_.clear();
  }
  if (settings_) settings_->Restore();  // If Start() failed half-way; idempotent.
  RemoveInstanceIfCreated();
  settings_.reset();
}

void FtraceDataSource::AddWarning(const std::string& warning) {
  if (options_.control.print_warnings) fprintf(stderr, "sluice: warning: %s\n", warning.c_str());
  std::lock_guard<std::mutex> lock(warnings_mutex_);
  warnings_.push_back(warning);
}

void FtraceDataSource::RemoveInstanceIfCreated() {
  if (!tracefs_ || !tracefs_->created_instance()) return;
  Status st = tracefs_->RemoveCreatedInstance();
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(warnings_mutex_);
    warnings_.push_back(st.message());
    return;
  }
  if (settings_) settings_->OnInstanceRemoved();
}

Status FtraceDataSource::Start() {
  if (started_) return Status::Error("FtraceDataSource::Start called twice");
  Status st = settings_->Start();
  if (!st.ok()) return st;

  auto formats = FtraceFormatTable::Load(tracefs_->EventsDir(), settings_->active_events(),
                                         &format_missing_);
  if (!formats.ok()) {
    settings_->Restore();
    return formats.status();
  }
  formats_ = std::move(formats).value();
  page_size_ = formats_.header().page_size();
  for (const std::string& e : format_missing_) {
    std::lock_guard<std::mutex> lock(warnings_mutex_);
    warnings_.push_back("format of ftrace event " + e + " unreadable: its events are skipped");
  }
  // Unset means on, as upstream since v42 (a Perfetto config that leaves
  // it out expects compact sched events).
  encode_options_.compact_sched = !config_.compact_sched().has_enabled() || config_.compact_sched().enabled();
  encode_options_.ftrace_clock = settings_->ftrace_clock_enum();
  if (auto size = tracefs_->ReadBufferSize(); size.ok() && page_size_ != 0) {
    buffer_pages_per_cpu_ = static_cast<uint32_t>(uint64_t{size->kb} * 1024 / page_size_);
  }
  // Only above the watermark sluice would set, and never over the config's.
  if (auto percent = tracefs_->ReadBufferPercent(); percent.ok()) {
    may_adapt_watermark_ = config_.drain_buffer_percent() == 0 && *percent > kFastFillBufferPercent;
    if (config_.drain_period_ms() == 0) drain_period_ms_ = kWatermarkDrainPeriodMs;
  }
  last_watermark_tick_ = Clock::now();

  stats_cpus_ = tracefs_->ListPerCpuDirs();
  stats_writer_ = make_writer_();

  std::vector<uint32_t> online;
  if (auto cpus = tracefs_->ReadOnlineCpus(); cpus.ok()) {
    online = std::move(cpus).value();
  } else {
    online = stats_cpus_;
  }
  // The readers first (their threads later), so that START says how each
  // CPU is read.
  size_t started_readers = 0;
  Status first_error;
  for (uint32_t cpu : online) {
    Status rs = StartReader(cpu, false);
    if (rs.ok()) {
      started_readers++;
    } else if (first_error.ok()) {
      first_error = rs;
    }
  }
  const bool must_map = read_mode_ == sluice::protos::FTRACE_READ_MODE_MAPPED;
  if (started_readers == 0 || (must_map && !first_error.ok())) {
    // Unmapped before the restore: the kernel refuses to resize a mapped
    // buffer.
    DestroyReaders();
    settings_->Restore();
    return first_error.ok() ? Status::Error("no online CPU has a per_cpu/cpuN/trace_pipe_raw in " +
                                            tracefs_->dir() + ": is this tracefs?")
                            : first_error;
  }
  if (!first_error.ok()) {
    std::lock_guard<std::mutex> lock(warnings_mutex_);
    warnings_.push_back(first_error.message());
  }
  WriteStats(FtraceStats::START_OF_TRACE);
  for (auto& state : cpus_) {
    if (state && state->worker()) state->worker()->StartThread(drain_period_ms_);
  }
  started_ = true;
  {
    std::lock_guard<std::mutex> lock(api_mutex_);
    drain_running_ = true;
  }
  drain_thread_ = std::thread([this] { DrainThreadMain(); });
  return Status::Ok();
}

void FtraceDataSource::DestroyReaders() {
  std::lock_guard<std::mutex> lock(readers_mutex_);
  cpus_.clear();
}

Status FtraceDataSource::StartReader(uint32_t cpu, bool start_thread) {
  CpuState* state;
  {
    std::lock_guard<std::mutex> lock(readers_mutex_);
    if (cpu >= cpus_.size()) cpus_.resize(cpu + 1);
    std::unique_ptr<CpuState>& slot = cpus_[cpu];
    if (!slot) {
      // First time this CPU is seen: its writer and encoder live to the end.
      slot = std::make_unique<CpuState>();
      slot->cpu = cpu;
      slot->writer = make_writer_();
      slot->encoder = std::make_unique<FtracePageEncoder>(&formats_, cpu, encode_options_);
    }
    state = slot.get();
  }
  // AUTO reads with splice, as SPLICE does. Where the kernel maps ring
  // buffers, its GET_READER advances the kernel's reader over each event of
  // the new page under the buffer's lock, and on 6.18 that costs more CPU
  // than splice's copy of the whole page (docs/FTRACE.md, "Which read
  // path"). MAPPED reads in place, on request.
  if (read_mode_ == sluice::protos::FTRACE_READ_MODE_MAPPED) {
    auto mapped = MapReader(state);
    if (!mapped.ok())
      return Status::Error("cpu " + std::to_string(cpu) + ": " + mapped.status().message() +
                           "; ring_buffer_read_mode is FTRACE_READ_MODE_MAPPED (sluice record "
                           "--ftrace-read=mapped): leave it unset (or give --ftrace-read=splice) to read "
                           "with splice");
    WatchForNearMiss(mapped->get());
    if (start_thread) (*mapped)->StartThread(drain_period_ms_);
    std::lock_guard<std::mutex> lock(readers_mutex_);
    state->mapped = std::move(mapped).value();
    state->read_paths |= kReadMapped;
    return Status::Ok();
  }
  FtraceCpuReaderOptions reader_options;
  reader_options.page_size = page_size_;
  if (buffer_pages_per_cpu_ != 0) reader_options.max_pages_per_read = buffer_pages_per_cpu_;
  reader_options.start_paused = paused_.load(std::memory_order_relaxed);
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<FtraceCpuReader> reader,
      FtraceCpuReader::Create(cpu, tracefs_->PerCpuPath(cpu, "trace_pipe_raw"), reader_options,
                              state->encoder.get(), state->writer.get(), &signal_));
  WatchForNearMiss(reader.get());
  if (start_thread) reader->StartThread(drain_period_ms_);
  std::lock_guard<std::mutex> lock(readers_mutex_);
  state->reader = std::move(reader);
  state->read_paths |= kReadSplice;
  return Status::Ok();
}

StatusOr<std::unique_ptr<FtraceMappedCpuReader>> FtraceDataSource::MapReader(CpuState* state) {
  return FtraceMappedCpuReader::Create(state->cpu, tracefs_->PerCpuPath(state->cpu, "trace_pipe_raw"),
                                       formats_.header(), state->encoder.get(), state->writer.get(),
                                       &signal_, paused_.load(std::memory_order_relaxed));
}

void FtraceDataSource::StopReader(CpuState* state) {
  state->worker()->StopThread();
  state->worker()->Flush();  // Everything the CPU's buffer still holds.
  RetireReader(state);
}

void FtraceDataSource::RetireReader(CpuState* state) {
  if (state->reader) AccumulateStats(&state->retired_reader_stats, state->reader->stats());
  if (state->mapped) AccumulateStats(&state->retired_mapped_stats, state->mapped->stats());
  if (state->worker()) state->retired_wake_stats = state->WakeStats();
  std::lock_guard<std::mutex> lock(readers_mutex_);
  state->reader.reset();
  state->mapped.reset();  // Unmaps.
}

void FtraceDataSource::DrainThreadMain() {
  pthread_setname_np(pthread_self(), "ftrace-drain");
  DrainLoop();
  {
    std::lock_guard<std::mutex> lock(api_mutex_);
    drain_running_ = false;
  }
  api_cv_.notify_all();  // A stats() waiting for a publish.
}

void FtraceDataSource::DrainLoop() {
  // At rest the period doubles, up to kHousekeepingRestFactor times the
  // configured one, by the rule of a session's flush period
  // (service/rest_flush_period.h): on this machine each wake-up of a thread
  // that slept for seconds costs about 0.4 ms of CPU, a third of a
  // recorder's cost at rest when it came every 30 s (docs/PERFORMANCE.md,
  // "Sluice at rest"). A period that reads more, or sees a CPU come or go,
  // puts it back.
  const auto base_ms = static_cast<uint32_t>(options_.housekeeping_period.count());
  uint32_t period_ms = base_ms;
  uint64_t bytes_at_tick = BytesReadByAll();
  auto next_tick = Clock::now() + std::chrono::milliseconds(period_ms);
  for (;;) {
    // Each time round, not only at the tick: a worker's near miss notified
    // the signal, which a publish request may have taken.
    if (AnyNearMiss()) LowerWatermark();
    const auto now = Clock::now();
    if (now < next_tick) {
      // Rounded up: rounded down, the wait ended just before the tick and
      // the thread woke a second time, a millisecond later, to reach it.
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_tick - now);
      signal_.WaitFor(static_cast<uint32_t>(std::max<int64_t>(wait.count(), 1)));
    }
    // relaxed: Abandon() joins this thread; the flag only has to be seen.
    if (abandoned_.load(std::memory_order_relaxed)) return;
    uint64_t publish;
    bool exit;
    {
      std::lock_guard<std::mutex> lock(api_mutex_);
      exit = drain_exit_requested_;
      publish = publish_requested_;
    }
    if (exit) return;
    if (publish != publish_done_) {
      PublishCounters();
      {
        std::lock_guard<std::mutex> lock(api_mutex_);
        publish_done_ = publish;
      }
      api_cv_.notify_all();
    }
    if (Clock::now() >= next_tick) {
      bool cpus_changed;
      {
        // Apart from a Flush() on the API thread, which reads every CPU.
        std::lock_guard<std::mutex> lock(flush_mutex_);
        cpus_changed = HandleHotplug();
      }
      AdaptWatermark(Clock::now());
      PublishCounters();
      const uint64_t bytes = BytesReadByAll();
      period_ms = cpus_changed ? base_ms
                               : NextRestFlushPeriodMs(period_ms, base_ms, base_ms * kHousekeepingRestFactor,
                                                       bytes - bytes_at_tick);
      bytes_at_tick = bytes;
      next_tick = std::max(next_tick + std::chrono::milliseconds(period_ms), Clock::now());
    }
  }
}

void FtraceDataSource::WatchForNearMiss(FtraceReaderWorker* worker) const {
  if (may_adapt_watermark_ && !watermark_lowered_)
    worker->set_near_miss_pages(FtraceNearMissPages(buffer_pages_per_cpu_));
}

bool FtraceDataSource::AnyNearMiss() const {
  if (!may_adapt_watermark_ || watermark_lowered_) return false;
  for (const auto& s : cpus_) {
    if (s && FtraceNearMiss(s->WakeStats().most_pages_per_wake, buffer_pages_per_cpu_)) return true;
  }
  return false;
}

void FtraceDataSource::AdaptWatermark(Clock::time_point now) {
  if (!may_adapt_watermark_ || watermark_lowered_) return;
  const uint64_t elapsed_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - last_watermark_tick_).count());
  last_watermark_tick_ = now;
  const uint64_t buffer_bytes = uint64_t{buffer_pages_per_cpu_} * page_size_;
  bool fast = false;
  for (auto& s : cpus_) {
    if (!s) continue;
    const uint64_t bytes = s->BytesRead();
    fast |= FtraceBufferFillsFast(buffer_bytes, bytes - s->bytes_at_last_tick, elapsed_ms);
    s->bytes_at_last_tick = bytes;
  }
  if (fast) LowerWatermark();
}

void FtraceDataSource::LowerWatermark() {
  watermark_lowered_ = true;
  Status st = settings_->SetBufferPercent(kFastFillBufferPercent);
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(warnings_mutex_);
    warnings_.push_back("cannot lower the readers' watermark (buffer_percent) for a fast-filling buffer: " +
                        st.message());
  }
}

uint64_t FtraceDataSource::BytesReadByAll() const {
  uint64_t bytes = 0;
  for (const auto& s : cpus_) {
    if (s) bytes += s->BytesRead();
  }
  return bytes;
}

bool FtraceDataSource::HandleHotplug() {
  auto online = tracefs_->ReadOnlineCpus(&cpu_online_fd_);
  if (!online.ok()) return false;
  bool changed = false;
  std::vector<bool> is_online;
  for (uint32_t cpu : *online) {
    if (cpu >= is_online.size()) is_online.resize(cpu + 1, false);
    is_online[cpu] = true;
  }
  for (auto& s : cpus_) {
    if (s && s->worker() && (s->cpu >= is_online.size() || !is_online[s->cpu])) {
      StopReader(s.get());
      changed = true;
    }
  }
  for (uint32_t cpu : *online) {
    if (cpu < cpus_.size() && cpus_[cpu] && cpus_[cpu]->worker()) continue;
    changed = true;
    Status st = StartReader(cpu, true);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(warnings_mutex_);
      if (warnings_.size() < 64) warnings_.push_back("cpu " + std::to_string(cpu) + ": " + st.message());
    }
  }
  return changed;
}

void FtraceDataSource::StopDrainThread() {
  {
    std::lock_guard<std::mutex> lock(api_mutex_);
    drain_exit_requested_ = true;
  }
  signal_.Notify();
  drain_thread_.join();
}

void FtraceDataSource::Flush() {
  if (!started_ || stopped_) return;
  {
    std::lock_guard<std::mutex> lock(flush_mutex_);
    FlushRoomWait room_wait;  // One patience for the round (ftrace_reader_worker.h).
    for (auto& s : cpus_) {
      if (s && s->worker()) s->worker()->Flush(&room_wait);
    }
  }
  if (stats_writer_) stats_writer_->Flush();
}

void FtraceDataSource::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  SetReadingPausedForTesting(false);
  // Nothing new from our events, then everything that is left.
  settings_->DisableEvents();
  StopDrainThread();
  // Once each worker is gone, only this thread reads.
  FlushRoomWait room_wait;
  for (auto& s : cpus_) {
    if (!s || !s->worker()) continue;
    s->worker()->StopThread();
    s->worker()->Flush(&room_wait);
  }
  PublishCounters();
  // Unmap and close every trace_pipe_raw: the kernel refuses to resize a
  // mapped buffer, and an instance with open files cannot be removed.
  for (auto& s : cpus_) {
    if (!s || !s->worker()) continue;
    RetireReader(s.get());
  }
  WriteStats(FtraceStats::END_OF_TRACE);
  stats_writer_->Flush();
  settings_->Restore();
  RemoveInstanceIfCreated();
  std::lock_guard<std::mutex> lock(warnings_mutex_);
  for (const std::string& e : settings_->restore_errors()) warnings_.push_back(e);
}

FtraceAbandonStats FtraceDataSource::Abandon() {
  FtraceAbandonStats lost;
  if (!started_ || stopped_) return lost;
  stopped_ = true;
  // Nothing new from our events; then the threads, at their next check.
  settings_->DisableEvents();
  abandoned_.store(true, std::memory_order_relaxed);
  signal_.Notify();
  drain_thread_.join();
  for (auto& s : cpus_) {
    if (!s || !s->worker()) continue;
    s->worker()->StopThread();  // What it read is in its writer, undeliverable now.
    RetireReader(s.get());  // Unmaps and closes: tracefs can be restored, the instance can go.
  }
  PublishCounters();
  for (uint32_t cpu : stats_cpus_) {
    // Before the restore: resizing or changing the clock empties the buffer.
    if (auto stats = ReadFtraceCpuStats(*tracefs_, cpu); stats.ok()) {
      lost.kernel_unread_events += stats->entries;
    }
  }
  settings_->Restore();
  RemoveInstanceIfCreated();
  std::lock_guard<std::mutex> lock(warnings_mutex_);
  for (const std::string& e : settings_->restore_errors()) warnings_.push_back(e);
  return lost;
}

void FtraceDataSource::SetReadingPausedForTesting(bool paused) {
  paused_.store(paused, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(readers_mutex_);
  for (auto& s : cpus_) {
    if (s && s->worker()) s->worker()->SetPaused(paused);
  }
}

void FtraceDataSource::PublishCounters() {
  FtraceSourceStats c;
  for (auto& s : cpus_) {
    if (!s) continue;
    // A running worker owns the encoder: its published copy.
    const FtraceParseStats p = s->worker() ? s->worker()->encoder_stats() : s->encoder->stats();
    c.events += p.events;
    c.bundles += p.bundles;
    c.lost_event_pages += p.lost_event_pages;
    c.lost_events_known += p.lost_events_known;
    c.lost_event_pages_uncounted += p.lost_event_pages_uncounted;
    c.parse_errors += p.parse_errors;
    c.unknown_event_ids += p.unknown_event_ids;
    FtraceCpuReaderStats r = s->retired_reader_stats;
    if (s->reader) AccumulateStats(&r, s->reader->stats());
    FtraceMappedCpuReaderStats m = s->retired_mapped_stats;
    if (s->mapped) AccumulateStats(&m, s->mapped->stats());
    c.pages += r.pages + m.pages;
    c.bytes += r.bytes + m.bytes;
    c.read_errors += r.read_errors + m.ioctl_errors + m.bad_reader_ids;
    c.mapped_cpus += s->mapped ? 1 : 0;
    c.splice_cpus += s->reader ? 1 : 0;
    const FtraceReaderWakeStats w = s->WakeStats();
    c.smb_full_waits += w.smb_full_waits;
    c.smb_full_wait_ms += w.smb_full_wait_us / 1000;
  }
  stats_.Store(c);
}

FtraceSourceStats FtraceDataSource::stats() const {
  std::unique_lock<std::mutex> lock(api_mutex_);
  if (drain_running_) {
    // The drain thread publishes on request (the counters of readers it may
    // be starting or stopping are its own to read). It is busy at most for
    // a hotplug: past kStatsWait the last snapshot is the answer.
    constexpr auto kStatsWait = std::chrono::milliseconds(200);
    const uint64_t ticket = ++publish_requested_;
    signal_.Notify();
    api_cv_.wait_for(lock, kStatsWait, [&] { return publish_done_ >= ticket || !drain_running_; });
  }
  return stats_.Load();
}

std::vector<uint32_t> FtraceDataSource::ReadingCpusForTesting() const {
  std::lock_guard<std::mutex> lock(readers_mutex_);
  std::vector<uint32_t> cpus;
  for (const auto& s : cpus_) {
    if (s && s->worker()) cpus.push_back(s->cpu);
  }
  return cpus;
}

std::vector<std::string> FtraceDataSource::warnings() const {
  std::lock_guard<std::mutex> lock(warnings_mutex_);
  return warnings_;
}

void FtraceDataSource::WriteStatsForCut() {
  if (!started_ || stopped_ || !stats_writer_) return;
  WriteStats(FtraceStats::END_OF_TRACE, /*with_parse_errors=*/false);
  stats_writer_->Flush();
}

void FtraceDataSource::WriteStats(int phase, bool with_parse_errors) {
  auto packet = stats_writer_->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kFtraceStatsFieldNumber);
  packet->WriteVarInt(FtraceStats::kPhaseFieldNumber, static_cast<uint64_t>(phase));
  for (uint32_t cpu : stats_cpus_) {
    auto stats = ReadFtraceCpuStats(*tracefs_, cpu);
    if (!stats.ok()) continue;
    packet->BeginNested(FtraceStats::kCpuStatsFieldNumber);
    WriteFtraceCpuStatsFields(*stats, packet.writer());
    if (cpu < cpus_.size() && cpus_[cpu]) {
      const CpuState& state = *cpus_[cpu];
      if (state.read_paths != 0)
        packet->WriteVarInt(perfetto::protos::FtraceCpuStats::kSluiceReadPathFieldNumber, state.read_paths);
      const FtraceReaderWakeStats w = state.WakeStats();
      if (w.smb_full_waits != 0) {
        packet->WriteVarInt(perfetto::protos::FtraceCpuStats::kSluiceSmbFullWaitsFieldNumber, w.smb_full_waits);
        packet->WriteVarInt(perfetto::protos::FtraceCpuStats::kSluiceSmbFullWaitMsFieldNumber,
                            w.smb_full_wait_us / 1000);
      }
      if (w.most_pages_per_wake != 0) {
        packet->WriteVarInt(perfetto::protos::FtraceCpuStats::kSluiceMostPagesPerWakeFieldNumber,
                            w.most_pages_per_wake);
      }
    }
    packet->EndNested();
  }
  if (!settings_->atrace_errors().empty()) {
    packet->WriteString(FtraceStats::kAtraceErrorsFieldNumber, settings_->atrace_errors());
  }
  for (const std::string& e : settings_->unknown_events()) {
    packet->WriteString(FtraceStats::kUnknownFtraceEventsFieldNumber, e);
  }
  for (const std::string& e : settings_->failed_events()) {
    packet->WriteString(FtraceStats::kFailedFtraceEventsFieldNumber, e);
  }
  for (const std::string& e : format_missing_) {
    packet->WriteString(FtraceStats::kFailedFtraceEventsFieldNumber, e);
  }
  for (const std::string& f : settings_->failed_kprobes()) {
    packet->WriteString(FtraceStats::kFailedFtraceEventsFieldNumber, "kprobe " + f);
  }
  if (config_.preserve_ftrace_buffer()) {
    packet->WriteVarInt(FtraceStats::kPreserveFtraceBufferFieldNumber, 1);
  }
  if (buffer_choice_.instance_name != config_.instance_name())
    packet->WriteString(FtraceStats::kSluiceOwnInstanceFieldNumber, buffer_choice_.instance_name);
  if (options_.tracefs_root.empty()) {
    for (const TracefsReader& r : ReadersOfInstance(FindTracefsReaders(getpid()), tracefs_->instance_name()))
      packet->WriteString(FtraceStats::kSluiceOtherReadersFieldNumber, DescribeTracefsReaders({r}));
  }
  // Read back, not remembered: what the kernel had (before Restore()).
  if (auto percent = tracefs_->ReadBufferPercent(); percent.ok())
    packet->WriteVarInt(FtraceStats::kSluiceBufferPercentFieldNumber, *percent);
  if (phase == FtraceStats::END_OF_TRACE && with_parse_errors) {
    // Each distinct parse error once, as upstream does.
    bool seen[kFtraceParseStatusCount] = {};
    for (auto& s : cpus_) {
      if (!s) continue;
      const FtraceParseStats& p = s->encoder->stats();
      for (size_t i = 2; i < kFtraceParseStatusCount; i++) seen[i] |= p.errors_by_status[i] != 0;
    }
    for (size_t i = 2; i < kFtraceParseStatusCount; i++) {
      if (seen[i]) packet->WriteVarInt(FtraceStats::kFtraceParseErrorsFieldNumber, i);
    }
  }
  if (buffer_pages_per_cpu_ != 0) {
    packet->WriteVarInt(FtraceStats::kCpuBufferSizePagesFieldNumber, buffer_pages_per_cpu_);
  }
  packet->EndNested();
}

}  // namespace sluice
