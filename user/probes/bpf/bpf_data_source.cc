#include "user/probes/bpf/bpf_data_source.h"

#include <bpf/libbpf.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <type_traits>

#include "perfetto/trace/profiling/profile_packet.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "sluice/bpf.pb.h"
#include "sluice/bpf_config.pb.h"
#include "user/probes/bpf/bpf_event_decoder.h"
#include "user/probes/bpf/bpf_lost_records.h"
#include "user/probes/bpf/bpf_marker_files.h"
#include "user/probes/flush_room_wait.h"
#include "shm/base/clock.h"

namespace sluice {
namespace {

// Records one drain cycle consumes before the loop looks at its control
// channel again (a ring refilled as fast as it is read would otherwise keep
// ring_buffer__consume() going forever).
constexpr uint64_t kRecordsPerCycle = 1 << 20;
// A full SMB (as in the ftrace readers, user/probes/ftrace/
// ftrace_reader_worker.h): the reader reads only while its writers have
// room, asking for kRoomCreditBytes at a time and spending the answer as
// credit (a record's encoding is at most about twice its size), and stops
// when less is left than the largest record takes, so that the rings, not
// the SMB, overflow and the programs count each record that did not fit.
// It asks again after kRoomRetryMs or a kick.
constexpr uint64_t kRoomCreditBytes = 256 * 1024;
constexpr uint64_t kEncodedBytesPerRecordByte = 2;
constexpr uint64_t kLargestRecordBytes = 2048;  // A marker of marker_payload_bytes (<= 1 KiB) and its header.
constexpr int kRoomRetryMs = 5;
constexpr auto kFlushTimeout = std::chrono::seconds(5);
// Stop(): how long to wait for programs that were running when detached.
constexpr auto kFinalDrainTimeout = std::chrono::seconds(1);

// Totals, not per CPU: in shared-ring mode a record of a CPU without a
// writer is delivered as "unrouted" and counted in the total only.
bool IdentityHolds(const BpfSourceStats& c) {
  return c.total.produced == c.total.delivered + c.total.dropped;
}

// The counter structs seen as arrays of 64-bit words: both are nothing but
// __u64/uint64_t fields (sluice_cpu_stats by the rules of bpf/<probe>.h
// headers), so summing or testing them needs no list of their fields.
template <typename T>
constexpr size_t kWords = sizeof(T) / sizeof(uint64_t);
static_assert(sizeof(sluice_cpu_stats) == kWords<sluice_cpu_stats> * sizeof(uint64_t) &&
                  std::has_unique_object_representations_v<sluice_cpu_stats>,
              "struct sluice_cpu_stats must be __u64 fields only");
static_assert(sizeof(BpfReaderCpuStats) == kWords<BpfReaderCpuStats> * sizeof(uint64_t) &&
                  std::has_unique_object_representations_v<BpfReaderCpuStats>,
              "BpfReaderCpuStats must be uint64_t fields only");

template <typename T>
void AddWords(T* to, const T& from) {
  uint64_t a[kWords<T>], b[kWords<T>];
  std::memcpy(a, to, sizeof(T));
  std::memcpy(b, &from, sizeof(T));
  for (size_t i = 0; i < kWords<T>; i++) a[i] += b[i];
  std::memcpy(to, a, sizeof(T));
}

template <typename T>
bool AllWordsZero(const T& value) {
  uint64_t words[kWords<T>];
  std::memcpy(words, &value, sizeof(T));
  for (uint64_t w : words) {
    if (w) return false;
  }
  return true;
}

// The one place where a per-CPU counter meets its proto field
// (BpfStats.CpuStats in protos/sluice/bpf.proto).
void WriteCpuStats(uint32_t cpu, const BpfCpuStats& o, protos::BpfStats::CpuStats* s) {
  s->set_cpu(cpu);
  s->set_produced(o.produced);
  s->set_delivered(o.delivered);
  s->set_dropped(o.dropped);
  s->set_filtered_task(o.filtered_task);
  s->set_filtered_rate(o.filtered_rate);
  s->set_marker_truncated(o.marker_truncated);
  s->set_marker_read_faults(o.marker_read_faults);
  s->set_wakeups(o.wakeups);
  s->set_decode_errors(o.decode_errors);
}

}  // namespace

BpfCpuStats& BpfCpuStats::operator+=(const BpfCpuStats& other) {
  AddWords<sluice_cpu_stats>(this, other);
  AddWords<BpfReaderCpuStats>(this, other);
  return *this;
}

bool BpfCpuStats::all_zero() const {
  return AllWordsZero<sluice_cpu_stats>(*this) && AllWordsZero<BpfReaderCpuStats>(*this);
}

StatusOr<std::unique_ptr<BpfDataSource>> BpfDataSource::Create(
    const protos::BpfConfig& config, MakeWriter make_writer, const BpfDataSourceOptions& options) {
  std::unique_ptr<BpfDataSource> source(new BpfDataSource());
  SLUICE_RETURN_IF_ERROR(source->Init(config, std::move(make_writer), options));
  return source;
}

// Settings → loader (programs loaded, rings created) → writers → libbpf's
// ring reader → epoll set. What each step creates is a member, freed by the
// destructor if a later step fails.
Status BpfDataSource::Init(const protos::BpfConfig& config, MakeWriter make_writer,
                           const BpfDataSourceOptions& options) {
  options_ = options;
  if (!options_.warn) {
    options_.warn = [](const std::string& m) { fprintf(stderr, "sluice: %s\n", m.c_str()); };
  }
  const bool shared = options_.ring_mode == BpfDataSourceOptions::RingMode::kShared;
  int possible = libbpf_num_possible_cpus();
  if (possible <= 0) return Status::Error("linux.bpf: cannot read the number of possible CPUs");
  num_cpus_ = static_cast<uint32_t>(possible);

  SLUICE_ASSIGN_OR_RETURN(settings_, BpfSettings::FromConfig(config, num_cpus_, shared));
  for (const std::string& name : settings_.unknown_events) {
    options_.warn("linux.bpf: event '" + name + "' is not one this source has; skipping it");
  }
  SLUICE_ASSIGN_OR_RETURN(BpfLoaderOptions lo, LoaderOptions(config));
  SLUICE_ASSIGN_OR_RETURN(loader_, BpfLoader::Load(settings_, lo));
  loader_info_ = loader_->info();
  SLUICE_RETURN_IF_ERROR(CreateWriters(make_writer));
  SLUICE_RETURN_IF_ERROR(OpenRingReader());
  return SetUpEpoll();
}

StatusOr<BpfLoaderOptions> BpfDataSource::LoaderOptions(const protos::BpfConfig& config) const {
  BpfLoaderOptions lo;
  lo.shared_ring = options_.ring_mode == BpfDataSourceOptions::RingMode::kShared;
  lo.wakeup_fill_percent = options_.wakeup_fill_percent;
  lo.force_tracepoint = options_.force_tracepoint;
  lo.force_marker_tracepoint = options_.force_marker_tracepoint;
  lo.fentry_on_rt = options_.fentry_on_rt;
  lo.verbose = options_.verbose;
  lo.enable_run_time_stats = options_.enable_run_time_stats;
  lo.tracefs_root = options_.tracefs_root;
  lo.warn = options_.warn;
  if (settings_.has(BpfEvent::kPrint)) {
    std::vector<std::string> instances = options_.marker_instances;
    if (config.trace_marker_instances_size() > 0) {
      instances.clear();
      for (const std::string& name : config.trace_marker_instances()) {
        instances.push_back(name == "root" ? "" : name);
      }
    }
    SLUICE_ASSIGN_OR_RETURN(lo.marker_files, ResolveMarkerFiles(options_.tracefs_root, instances));
  }
  return lo;
}

// A writer per CPU online now. Records of a CPU brought online later have
// no ring in per-CPU mode (counted as dropped); in shared mode they are
// counted as unrouted.
Status BpfDataSource::CreateWriters(const MakeWriter& make_writer) {
  const std::vector<bool>& online = loader_->online_cpus();
  bundles_.resize(num_cpus_);
  for (uint32_t cpu = 0; cpu < num_cpus_; cpu++) {
    if (cpu >= online.size() || !online[cpu]) continue;
    std::unique_ptr<TraceWriter> w = make_writer();
    if (!w) return Status::Error("linux.bpf: no trace writer available (CPU " + std::to_string(cpu) + ")");
    bundles_[cpu] = std::make_unique<BpfBundleWriter>(cpu, w.get(), options_.max_events_per_bundle);
    writers_.push_back(std::move(w));
  }
  stats_writer_ = make_writer();
  if (!stats_writer_) return Status::Error("linux.bpf: no trace writer available (stats)");
  reader_cpu_stats_ = std::make_unique<AtomicStats<BpfReaderCpuStats>[]>(num_cpus_);
  last_dropped_.assign(num_cpus_, 0);
  return Status::Ok();
}

// One libbpf ring_buffer over every ring fd, each with its RingCtx.
Status BpfDataSource::OpenRingReader() {
  const bool shared = options_.ring_mode == BpfDataSourceOptions::RingMode::kShared;
  // ring_ctx_ must not move once libbpf holds pointers into it.
  const std::vector<int>& fds = loader_->ring_fds();
  ring_ctx_.reserve(fds.size());
  for (size_t i = 0; i < fds.size(); i++) {
    if (fds[i] < 0) continue;
    ring_ctx_.push_back(RingCtx{this, shared ? -1 : static_cast<int>(i)});
    RingCtx* ctx = &ring_ctx_.back();
    int err = 0;
    if (!rb_) {
      rb_ = ring_buffer__new(fds[i], &BpfDataSource::OnRecord, ctx, nullptr);
      if (!rb_) err = -errno;
    } else {
      err = ring_buffer__add(rb_, fds[i], &BpfDataSource::OnRecord, ctx);
    }
    if (err) return Status::Error("linux.bpf: cannot map BPF ring " + std::to_string(i) + ": " + strerror(-err));
  }
  if (!rb_) return Status::Error("linux.bpf: no BPF ring to read (no online CPU?)");
  return Status::Ok();
}

// The reader waits on libbpf's epoll fd (data: 0) and the control eventfd
// (data: 1).
Status BpfDataSource::SetUpEpoll() {
  epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
  event_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_fd_.valid() || !event_fd_.valid()) return Status::Error(std::string("linux.bpf: epoll/eventfd: ") + strerror(errno));
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u32 = 0;
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, ring_buffer__epoll_fd(rb_), &ev) != 0 ||
      (ev.data.u32 = 1, epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, event_fd_.get(), &ev)) != 0) {
    return Status::Error(std::string("linux.bpf: epoll_ctl: ") + strerror(errno));
  }
  return Status::Ok();
}

BpfDataSource::~BpfDataSource() {
  Stop();
  bundles_.clear();  // before the writers they point to
  if (rb_) ring_buffer__free(rb_);
}

Status BpfDataSource::Start() {
  if (started_ || stopped_) return Status::Error("linux.bpf: Start() called twice");
  SLUICE_RETURN_IF_ERROR(loader_->Attach());
  loader_info_ = loader_->info();
  started_ = true;
  reader_ = std::thread(&BpfDataSource::ReaderLoop, this);
  return Status::Ok();
}

void BpfDataSource::Signal() {
  uint64_t one = 1;
  ssize_t n = write(event_fd_.get(), &one, sizeof(one));
  (void)n;  // EAGAIN: the counter is already non-zero, the reader will wake
}

int BpfDataSource::OnRecord(void* ctx, void* data, size_t size) {
  auto* rc = static_cast<RingCtx*>(ctx);
  BpfDataSource* self = rc->self;
  const auto* rec = static_cast<const uint8_t*>(data);
  uint32_t cpu;
  if (rc->cpu >= 0) {
    cpu = static_cast<uint32_t>(rc->cpu);
  } else {
    BpfEventDecoder::Header h;
    if (!BpfEventDecoder::ReadHeader(rec, size, &h) || h.cpu >= self->num_cpus_ ||
        !self->bundles_[h.cpu]) {
      self->reader_stats_.Add(&BpfReaderStats::unrouted);
      return 0;
    }
    cpu = h.cpu;
  }
  self->bundles_[cpu]->Append(rec, size);
  // A negative return makes libbpf stop after consuming this record.
  if (++self->consumed_in_cycle_ >= kRecordsPerCycle) return -EAGAIN;
  if (self->asking_room_) {
    self->room_credit_ -= std::min<uint64_t>(self->room_credit_, size * kEncodedBytesPerRecordByte);
    if (!self->HaveRoom()) {
      self->out_of_room_ = true;
      return -EAGAIN;
    }
  }
  return 0;
}

bool BpfDataSource::HaveRoom() {
  if (room_credit_ >= kLargestRecordBytes * kEncodedBytesPerRecordByte) return true;
  // The CPUs' writers share one SMB: any of them answers for all.
  room_credit_ = kRoomCreditBytes;
  for (const auto& w : writers_) {
    if (w) {
      room_credit_ = w->RoomBytes(kRoomCreditBytes);
      break;
    }
  }
  return room_credit_ >= kLargestRecordBytes * kEncodedBytesPerRecordByte;
}

BpfDataSource::DrainResult BpfDataSource::Drain(bool ask_room) {
  consumed_in_cycle_ = 0;
  asking_room_ = ask_room;
  out_of_room_ = ask_room && !HaveRoom();
  if (out_of_room_) return DrainResult::kNoRoom;
  int n = ring_buffer__consume(rb_);
  AfterDrain();
  if (out_of_room_) return DrainResult::kNoRoom;
  return (n < 0 && consumed_in_cycle_ >= kRecordsPerCycle) ? DrainResult::kBudgetHit
                                                           : DrainResult::kEmpty;
}

BpfDataSource::DrainResult BpfDataSource::DrainAll(bool ask_room, bool* took) {
  *took = false;
  DrainResult result;
  do {
    result = Drain(ask_room);
    *took |= consumed_in_cycle_ > 0;
  } while (result == DrainResult::kBudgetHit);
  return result;
}

void BpfDataSource::AfterDrain() {
  for (auto& b : bundles_) {
    if (b) b->Close();
  }
  std::vector<sluice_cpu_stats> k;
  if (loader_->ReadCounters(&k).ok()) {
    for (uint32_t cpu = 0; cpu < num_cpus_ && cpu < k.size(); cpu++) {
      if (bundles_[cpu] && k[cpu].dropped > last_dropped_[cpu]) {
        bundles_[cpu]->MarkLost();
        last_dropped_[cpu] = k[cpu].dropped;
      }
    }
  }
  // Skipped invocations cannot be pinned to a CPU: flag every CPU's next
  // bundle.
  uint64_t misses = 0;
  if (loader_->ReadMisses(&misses).ok() && misses > last_misses_) {
    for (auto& b : bundles_) {
      if (b) b->MarkLost();
    }
    last_misses_ = misses;
  }
  for (uint32_t cpu = 0; cpu < num_cpus_; cpu++) {
    if (!bundles_[cpu]) continue;
    BpfReaderCpuStats mine;
    mine.delivered = bundles_[cpu]->delivered();
    mine.decode_errors = bundles_[cpu]->decode_errors();
    reader_cpu_stats_[cpu].Store(mine);
  }
  reader_stats_.Add(&BpfReaderStats::drain_cycles);
}

void BpfDataSource::ReaderLoop() {
  pthread_setname_np(pthread_self(), "sluice-bpf");
  epoll_event events[2];
  bool waiting_for_room = false;
  // The pending flush's wait for room; reset when the flush completes.
  std::optional<FlushRoomWait> flush_room_wait;
  bool flush_ignores_room = false;
  for (;;) {
    if (waiting_for_room) {
      // Not on the rings: they stay readable while we leave their records.
      struct pollfd control = {event_fd_.get(), POLLIN, 0};
      const auto start = std::chrono::steady_clock::now();
      (void)poll(&control, 1, kRoomRetryMs);
      reader_stats_.Add(&BpfReaderStats::smb_full_wait_us,
                        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                  std::chrono::steady_clock::now() - start)
                                                  .count()));
    } else {
      int n = epoll_wait(epoll_fd_.get(), events, 2, static_cast<int>(options_.drain_period_ms));
      (void)n;  // woken by a ring, the control eventfd or the timeout: same work
    }
    uint64_t value;
    while (read(event_fd_.get(), &value, sizeof(value)) > 0) {
    }
    uint64_t flush_requested;
    bool flush;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_requested_) {
        // A flush still waiting for room ends here: Stop()'s final drain
        // reads the rest.
        flush_done_ = flush_requested_;
        cv_.notify_all();
        break;
      }
      flush_requested = flush_requested_;
      flush = flush_requested > flush_done_;
    }
    if (!paused_.load(std::memory_order_acquire)) {
      // A flush waits for room as reads between flushes do, but it must
      // end: once FlushRoomWait gives up it reads everything, and the
      // writers' policy (stall, then drop and count) applies to what does
      // not fit.
      bool took = false;
      const DrainResult result = DrainAll(/*ask_room=*/!(flush && flush_ignores_room), &took);
      if (result == DrainResult::kNoRoom && !waiting_for_room) reader_stats_.Add(&BpfReaderStats::smb_full_waits);
      waiting_for_room = result == DrainResult::kNoRoom;
      if (flush && waiting_for_room) {
        if (!flush_room_wait) flush_room_wait.emplace();
        if (!flush_room_wait->KeepWaiting(took)) flush_ignores_room = true;
        flush = false;  // Not done: completed once the rest is read.
      }
    }
    reader_stats_.Set(&BpfReaderStats::reader_cpu_ns, ClockNs(CLOCK_THREAD_CPUTIME_ID));
    if (flush) {
      WriteStatsPacket(/*final_phase=*/false);
      FlushWriters();
      std::lock_guard<std::mutex> lock(mu_);
      flush_done_ = flush_requested;
      cv_.notify_all();
      flush_room_wait.reset();
      flush_ignores_room = false;
    }
  }
}

void BpfDataSource::Flush() {
  if (!started_ || stopped_) return;
  uint64_t mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mine = ++flush_requested_;
  }
  Signal();
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, kFlushTimeout, [&] { return flush_done_ >= mine; })) {
    options_.warn("linux.bpf: flush timed out after 5 s (reader thread stuck?)");
  }
}

void BpfDataSource::Stop() {
  if (stopped_) return;
  if (started_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_requested_ = true;
    }
    Signal();
    reader_.join();  // the writers are this thread's from here on
    loader_->Detach();
    // A program that was running on another CPU when detached may still
    // submit; drain until every produced record is accounted for.
    auto deadline = std::chrono::steady_clock::now() + kFinalDrainTimeout;
    BpfSourceStats c;
    // What the rings hold goes through an SMB that may be full: wait for
    // room as a flush does.
    FlushRoomWait room_wait;
    bool ignore_room = false;
    for (;;) {
      bool took = false;
      const DrainResult result = DrainAll(/*ask_room=*/!ignore_room, &took);
      if (took) room_wait.NoteProgress();
      if (result == DrainResult::kNoRoom) {
        if (room_wait.KeepWaiting(took)) {
          usleep(kRoomRetryMs * 1000);
        } else {
          ignore_room = true;
        }
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        c = ReadCountersLocked();
      }
      if (IdentityHolds(c) || std::chrono::steady_clock::now() > deadline) break;
      usleep(1000);
    }
    for (auto& b : bundles_) {
      if (b) b->FlushPendingLoss();
    }
    WriteStatsPacket(/*final_phase=*/true);
    FlushWriters();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (loader_) final_counters_ = ReadCountersLocked();
  stopped_ = true;
  if (rb_) {
    ring_buffer__free(rb_);
    rb_ = nullptr;
  }
  loader_.reset();
}

BpfSourceStats BpfDataSource::ReadCountersLocked() const {
  BpfSourceStats c;
  static_cast<BpfReaderStats&>(c) = reader_stats_.Load();
  c.per_cpu.resize(num_cpus_);
  std::vector<sluice_cpu_stats> k;
  if (loader_ && loader_->ReadCounters(&k).ok()) {
    for (uint32_t cpu = 0; cpu < num_cpus_ && cpu < k.size(); cpu++) {
      static_cast<sluice_cpu_stats&>(c.per_cpu[cpu]) = k[cpu];
    }
  }
  for (uint32_t cpu = 0; cpu < num_cpus_ && reader_cpu_stats_; cpu++) {
    static_cast<BpfReaderCpuStats&>(c.per_cpu[cpu]) = reader_cpu_stats_[cpu].Load();
  }
  for (const BpfCpuStats& o : c.per_cpu) c.total += o;
  c.stats_packets = stats_packets_;
  if (loader_) (void)loader_->ReadMisses(&c.program_misses);
  c.total.delivered += c.unrouted;
  return c;
}

BpfSourceStats BpfDataSource::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return final_counters_;
  return ReadCountersLocked();
}

Status BpfDataSource::ReadRunStats(uint64_t* run_time_ns, uint64_t* run_count) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loader_) return Status::Error("linux.bpf: stopped");
  return loader_->ReadRunStats(run_time_ns, run_count);
}

void BpfDataSource::WriteStatsPacket(bool final_phase) {
  BpfSourceStats c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = ReadCountersLocked();
  }
  protos::BpfStats stats;
  stats.set_phase(final_phase ? protos::BpfStats::PHASE_END : protos::BpfStats::PHASE_PERIODIC);
  for (uint32_t cpu = 0; cpu < c.per_cpu.size(); cpu++) {
    if (c.per_cpu[cpu].all_zero()) continue;  // a CPU where nothing happened
    WriteCpuStats(cpu, c.per_cpu[cpu], stats.add_cpu_stats());
  }
  if (c.unrouted) stats.set_unrouted(c.unrouted);
  if (c.smb_full_waits) {
    stats.set_smb_full_waits(c.smb_full_waits);
    stats.set_smb_full_wait_ms(c.smb_full_wait_us / 1000);
  }
  stats.set_program_misses(c.program_misses);
  stats.set_produced(c.total.produced);
  stats.set_delivered(c.total.delivered);
  stats.set_dropped(c.total.dropped);
  stats.set_filtered(c.total.filtered_task + c.total.filtered_rate);
  if (final_phase) {
    stats.set_unaccounted(static_cast<int64_t>(c.total.produced) -
                          static_cast<int64_t>(c.total.delivered) -
                          static_cast<int64_t>(c.total.dropped));
  }
  stats.set_tracepoint_attach(loader_info_.tracepoint_attach);
  stats.set_marker_attach(loader_info_.marker_attach);
  stats.set_ring_mode(options_.ring_mode == BpfDataSourceOptions::RingMode::kShared ? "shared"
                                                                                    : "per_cpu");
  for (BpfEvent e : loader_info_.events) {
    BpfEventName n = BpfEventNameOf(e);
    stats.add_events(std::string(n.group) + "/" + std::string(n.name));
  }
  for (const std::string& s : loader_info_.skipped) stats.add_skipped_events(s);
  for (const std::string& s : settings_.unknown_events) stats.add_skipped_events(s + ": unknown event");

  std::string bytes = stats.SerializeAsString();  // off the hot path
  auto packet = stats_writer_->NewTracePacket();
  packet->WriteVarInt(perfetto::protos::TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->WriteBytes(protos::BpfStatsPacket::kBpfStatsFieldNumber, bytes.data(), bytes.size());
  packet.Finalize();
  WriteLostRecordsPackets(c, final_phase);
  std::lock_guard<std::mutex> lock(mu_);
  stats_packets_++;
}

void BpfDataSource::WriteLostRecordsPackets(const BpfSourceStats& c, bool final_phase) {
  for (const BpfLostRecords& lost : NextBpfLostRecords(c, final_phase, &lost_records_reported_)) {
    perfetto::protos::PerfSample sample;
    sample.set_cpu(lost.cpu);
    sample.set_kernel_records_lost(lost.records);
    std::string bytes = sample.SerializeAsString();
    auto packet = stats_writer_->NewTracePacket();
    packet->WriteVarInt(perfetto::protos::TracePacket::kTimestampFieldNumber, BootTimeNs());
    packet->WriteBytes(perfetto::protos::TracePacket::kPerfSampleFieldNumber, bytes.data(), bytes.size());
    packet.Finalize();
  }
}

void BpfDataSource::FlushWriters() {
  for (auto& w : writers_) w->Flush();
  stats_writer_->Flush();
}

void BpfDataSource::PauseReadingForTesting() { paused_.store(true, std::memory_order_release); }

void BpfDataSource::ResumeReadingForTesting() {
  paused_.store(false, std::memory_order_release);
  if (started_ && !stopped_) Signal();
}

}  // namespace sluice
