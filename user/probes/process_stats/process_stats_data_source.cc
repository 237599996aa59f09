#include "user/probes/process_stats/process_stats_data_source.h"

#include <dirent.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "perfetto/trace/ps/process_stats.pb.h"
#include "perfetto/trace/ps/process_tree.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/clock.h"
#include "shm/base/file_util.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

using perfetto::protos::ProcessStats;
using perfetto::protos::ProcessTree;
using perfetto::protos::TracePacket;

std::vector<pid_t> NumericEntries(const std::string& dir) {
  std::vector<pid_t> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return out;
}

// Fields of /proc/PID/status we need. False if the process is gone.
struct ProcStatus {
  std::string name;
  pid_t tgid = 0, ppid = 0;
  int uid = -1;
  int kthread = -1;  // Kthread: 0 or 1 (Linux 6.4+); -1 absent
};
// A line's number, as atoi would read it ("0\t0\t0\t0" for Uid: the first).
int LeadingInt(std::string_view text) {
  int value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}
// One read of the file and a scan of its lines: a flush reads the status of
// every pid new since the last one, so this is the flush's main cost when
// processes come and go.
bool ReadStatus(const std::string& path, ProcStatus* out) {
  auto text = ReadFile(path, 64 * 1024);
  if (!text.ok()) return false;
  ForEachLine(*text, [out](std::string_view line) {
    auto value_of = [line](std::string_view key) -> std::optional<std::string_view> {
      if (line.substr(0, key.size()) != key) return std::nullopt;
      return line.substr(key.size());
    };
    if (auto v = value_of("Name:\t")) out->name = *v;
    else if (auto v = value_of("Tgid:\t")) out->tgid = LeadingInt(*v);
    else if (auto v = value_of("PPid:\t")) out->ppid = LeadingInt(*v);
    else if (auto v = value_of("Uid:\t")) out->uid = LeadingInt(*v);
    else if (line == "Kthread:\t0" || line == "Kthread:\t1") out->kthread = line.back() - '0';
    return true;
  });
  return out->tgid != 0;
}

}  // namespace

ProcessStatsDataSource::ProcessStatsDataSource(const perfetto::protos::ProcessStatsConfig& config,
                                               std::unique_ptr<TraceWriter> writer,
                                               std::string proc_root)
    : config_(config),
      writer_(std::move(writer)),
      proc_root_(std::move(proc_root)),
      loadavg_path_(proc_root_ + "/loadavg") {
  poll_period_ms_ = config_.proc_stats_poll_ms();
  if (poll_period_ms_ > 0) poll_period_ms_ = std::max(poll_period_ms_, kMinPollPeriodMs);
  if (poll_period_ms_ > 0) cache_ttl_polls_ = std::max(config_.proc_stats_cache_ttl_ms() / poll_period_ms_, 1u);
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks > 0) ticks_per_second_ = ticks;
}

ProcessStatsDataSource::~ProcessStatsDataSource() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (poll_thread_.joinable()) poll_thread_.join();
}

void ProcessStatsDataSource::Start() {
  std::lock_guard<std::mutex> lock(mutex_);
  // /proc/self names us by our pid in the namespace /proc lists.
  char self[32];
  const ssize_t n = readlink((proc_root_ + "/self").c_str(), self, sizeof(self));
  proc_is_our_pid_namespace_ =
      n > 0 && std::string_view(self, static_cast<size_t>(n)) == std::to_string(getpid());
  if (config_.scan_all_processes_on_start()) ScanAndWriteNew();
  writer_->Flush();
  if (poll_period_ms_ > 0) poll_thread_ = std::thread([this] { PollThread(); });
}

void ProcessStatsDataSource::Flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  WriteNewProcessesLocked();
  writer_->Flush();
}

void ProcessStatsDataSource::WriteAllAgain() {
  std::lock_guard<std::mutex> lock(mutex_);
  seen_processes_.clear();
  seen_threads_.clear();
  written_counters_.clear();
  ScanAndWriteNew();
  writer_->Flush();
}

void ProcessStatsDataSource::WriteNewProcessesLocked() {
  const long last_pid = proc_is_our_pid_namespace_ ? ReadLastPid() : -1;
  const bool probe = last_pid >= 0 && last_pid_at_scan_ >= 0 && last_pid >= last_pid_at_scan_ &&
                     last_pid - last_pid_at_scan_ <= kMaxPidsToProbe;
  if (probe && last_pid == last_pid_at_scan_) {
    scans_skipped_++;  // No process or thread was created since the last scan.
  } else if (probe) {
    ProbeAndWriteNew(static_cast<pid_t>(last_pid_at_scan_ + 1), static_cast<pid_t>(last_pid));
    last_pid_at_scan_ = last_pid;
  } else {
    ScanAndWriteNew();
  }
}

long ProcessStatsDataSource::ReadLastPid() {
  // "0.52 0.58 0.59 2/301 12345": the last field is the last pid allocated.
  char buf[128];
  auto text = PreadFromStart(loadavg_path_, &loadavg_, buf);
  if (!text.ok() || text->size() == sizeof(buf)) return -1;
  std::string_view line = *text;
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const size_t space = line.find_last_of(' ');
  if (space == std::string_view::npos) return -1;
  long pid = -1;
  const std::string_view field = line.substr(space + 1);
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), pid);
  if (error != std::errc() || end != field.data() + field.size() || pid < 0) return -1;
  return pid;
}

void ProcessStatsDataSource::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (poll_thread_.joinable()) poll_thread_.join();
  Flush();
}

uint64_t ProcessStatsDataSource::polls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return polls_;
}

void ProcessStatsDataSource::PollNow() {
  std::lock_guard<std::mutex> lock(mutex_);
  PollLocked();
}

void ProcessStatsDataSource::PollThread() {
  pthread_setname_np(pthread_self(), "process-stats");
  std::unique_lock<std::mutex> lock(mutex_);
  // The first poll at once, so that even a short session has the counters.
  if (!stopping_) PollLocked();
  while (!stopping_) {
    // The next multiple of the period on the wall clock.
    const auto now = std::chrono::system_clock::now();
    const auto period = std::chrono::milliseconds(poll_period_ms_);
    const auto since_epoch = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
    const auto next = std::chrono::system_clock::time_point(since_epoch - since_epoch % period + period);
    if (stop_cv_.wait_until(lock, next, [this] { return stopping_; })) break;
    PollLocked();
  }
}

void ProcessStatsDataSource::PollLocked() {
  auto packet = writer_->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kProcessStatsFieldNumber);
  for (pid_t pid : NumericEntries(proc_root_)) {
    if (pids_without_memory_.count(pid)) continue;
    if (!WriteCountersLocked(packet.writer(), pid)) pids_without_memory_.insert(pid);
  }
  packet->WriteVarInt(ProcessStats::kCollectionEndTimestampFieldNumber, BootTimeNs());
  packet->EndNested();
  packet.Finalize();
  polls_++;
  if (++polls_since_cache_clear_ >= cache_ttl_polls_) {
    polls_since_cache_clear_ = 0;
    written_counters_.clear();
    pids_without_memory_.clear();  // A kernel thread's pid may be reused.
  }
  WriteNewProcessesLocked();
}

bool ProcessStatsDataSource::WriteCountersLocked(ProtoWriter* stats, pid_t pid) {
  const std::string dir = proc_root_ + "/" + std::to_string(pid);
  auto status = ReadFile(dir + "/status", 64 * 1024);
  if (!status.ok()) return true;  // Gone: nothing to write, nothing to learn.
  ProcMemoryCounters now;
  ParseProcStatus(*status, &now);
  if (!now.has_memory) return false;
  if (auto adj = ReadFile(dir + "/oom_score_adj", 64); adj.ok()) now.oom_score_adj = strtoll(adj->c_str(), nullptr, 10);
  if (config_.record_process_runtime()) {
    if (auto stat = ReadFile(dir + "/stat", 4096); stat.ok()) ParseProcStatRuntimes(*stat, ticks_per_second_, &now);
  }
  if (config_.scan_smaps_rollup()) {
    if (auto rollup = ReadFile(dir + "/smaps_rollup", 64 * 1024); rollup.ok()) ParseSmapsRollup(*rollup, &now);
  }
  ProcMemoryCounters& written = written_counters_[pid];
  bool begun = false;
  auto put = [&](auto ProcMemoryCounters::*field, uint32_t field_number) {
    const auto& value = now.*field;
    if (!value || value == written.*field) return;
    if (!begun) {
      stats->BeginNested(ProcessStats::kProcessesFieldNumber);
      stats->WriteInt(ProcessStats::Process::kPidFieldNumber, pid);
      begun = true;
    }
    if constexpr (std::is_signed_v<std::remove_reference_t<decltype(*value)>>) {
      stats->WriteInt(field_number, *value);
    } else {
      stats->WriteVarInt(field_number, *value);
    }
    written.*field = value;
  };
  using P = ProcessStats::Process;
  put(&ProcMemoryCounters::vm_size_kb, P::kVmSizeKbFieldNumber);
  put(&ProcMemoryCounters::vm_rss_kb, P::kVmRssKbFieldNumber);
  put(&ProcMemoryCounters::rss_anon_kb, P::kRssAnonKbFieldNumber);
  put(&ProcMemoryCounters::rss_file_kb, P::kRssFileKbFieldNumber);
  put(&ProcMemoryCounters::rss_shmem_kb, P::kRssShmemKbFieldNumber);
  put(&ProcMemoryCounters::vm_swap_kb, P::kVmSwapKbFieldNumber);
  put(&ProcMemoryCounters::vm_locked_kb, P::kVmLockedKbFieldNumber);
  put(&ProcMemoryCounters::vm_hwm_kb, P::kVmHwmKbFieldNumber);
  put(&ProcMemoryCounters::oom_score_adj, P::kOomScoreAdjFieldNumber);
  put(&ProcMemoryCounters::smr_rss_kb, P::kSmrRssKbFieldNumber);
  put(&ProcMemoryCounters::smr_pss_kb, P::kSmrPssKbFieldNumber);
  put(&ProcMemoryCounters::smr_pss_anon_kb, P::kSmrPssAnonKbFieldNumber);
  put(&ProcMemoryCounters::smr_pss_file_kb, P::kSmrPssFileKbFieldNumber);
  put(&ProcMemoryCounters::smr_pss_shmem_kb, P::kSmrPssShmemKbFieldNumber);
  put(&ProcMemoryCounters::smr_swap_pss_kb, P::kSmrSwapPssKbFieldNumber);
  put(&ProcMemoryCounters::runtime_user_mode_ns, P::kRuntimeUserModeFieldNumber);
  put(&ProcMemoryCounters::runtime_kernel_mode_ns, P::kRuntimeKernelModeFieldNumber);
  if (begun) stats->EndNested();
  return true;
}

void ProcessStatsDataSource::WriteProcess(ProtoWriter* tree, pid_t pid, pid_t ppid, int uid,
                                          const std::string& comm, const std::string& dir, int kthread) {
  seen_processes_.insert(pid);
  tree->BeginNested(ProcessTree::kProcessesFieldNumber);
  tree->WriteInt(ProcessTree::Process::kPidFieldNumber, pid);
  tree->WriteInt(ProcessTree::Process::kPpidFieldNumber, ppid);
  if (uid >= 0) tree->WriteInt(ProcessTree::Process::kUidFieldNumber, uid);
  // cmdline is NUL-separated; kernel threads have none: use the comm.
  // A process that exited since the directory scan has no cmdline: empty.
  std::string cmdline = ReadFile(dir + "/cmdline").value_or("");
  if (cmdline.empty()) {
    tree->WriteString(ProcessTree::Process::kCmdlineFieldNumber, comm);
    tree->WriteVarInt(ProcessTree::Process::kCmdlineIsCommFieldNumber, 1);
  } else {
    size_t start = 0;
    while (start < cmdline.size()) {
      size_t end = cmdline.find('\0', start);
      if (end == std::string::npos) end = cmdline.size();
      tree->WriteString(ProcessTree::Process::kCmdlineFieldNumber,
                        std::string_view(cmdline).substr(start, end - start));
      start = end + 1;
    }
  }
  if (config_.record_process_age()) {
    if (auto stat = ReadFile(dir + "/stat", 4096); stat.ok()) {
      if (auto start = ParseProcStartFromBootNs(*stat, ticks_per_second_))
        tree->WriteVarInt(ProcessTree::Process::kProcessStartFromBootFieldNumber, *start);
    }
  }
  if (kthread >= 0) tree->WriteVarInt(ProcessTree::Process::kIsKthreadFieldNumber, static_cast<uint64_t>(kthread));
  tree->EndNested();
  processes_written_++;
}

void ProcessStatsDataSource::WriteThread(ProtoWriter* tree, pid_t tid, pid_t tgid,
                                         const std::string& name) {
  seen_threads_.insert(tid);
  if (tid == tgid) return;  // The main thread is the process entry.
  tree->BeginNested(ProcessTree::kThreadsFieldNumber);
  tree->WriteInt(ProcessTree::Thread::kTidFieldNumber, tid);
  tree->WriteInt(ProcessTree::Thread::kTgidFieldNumber, tgid);
  tree->WriteString(ProcessTree::Thread::kNameFieldNumber, name);
  tree->EndNested();
  threads_written_++;
}

bool ProcessStatsDataSource::records_threads() const {
  return config_.record_thread_names() || config_.scan_all_processes_on_start();
}

// With mutex_ held.
void ProcessStatsDataSource::ScanAndWriteNew() {
  // Before the scan: a pid allocated during it is probed by the next flush.
  last_pid_at_scan_ = proc_is_our_pid_namespace_ ? ReadLastPid() : -1;
  auto packet = writer_->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kProcessTreeFieldNumber);
  for (pid_t pid : NumericEntries(proc_root_)) {
    std::string dir = proc_root_ + "/" + std::to_string(pid);
    if (!seen_processes_.count(pid)) {
      ProcStatus st;
      if (!ReadStatus(dir + "/status", &st)) continue;  // Gone already.
      WriteProcess(packet.writer(), pid, st.ppid, st.uid, st.name, dir, st.kthread);
    }
    if (!records_threads()) continue;
    for (pid_t tid : NumericEntries(dir + "/task")) {
      if (seen_threads_.count(tid)) continue;
      ProcStatus st;
      if (!ReadStatus(dir + "/task/" + std::to_string(tid) + "/status", &st)) continue;
      WriteThread(packet.writer(), tid, pid, st.name);
    }
  }
  packet->WriteVarInt(ProcessTree::kCollectionEndTimestampFieldNumber, BootTimeNs());
  packet->EndNested();
}

void ProcessStatsDataSource::ProbeAndWriteNew(pid_t first, pid_t last) {
  pids_probed_ += static_cast<uint64_t>(last - first + 1);
  auto packet = writer_->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kProcessTreeFieldNumber);
  for (pid_t tid = first; tid <= last; tid++) {
    // /proc/<tid> exists for a thread too, though readdir does not list it.
    const std::string dir = proc_root_ + "/" + std::to_string(tid);
    ProcStatus st;
    if (!ReadStatus(dir + "/status", &st)) continue;  // Gone, or not in this namespace.
    if (st.tgid == tid) {
      if (!seen_processes_.count(tid)) WriteProcess(packet.writer(), tid, st.ppid, st.uid, st.name, dir, st.kthread);
      if (records_threads()) seen_threads_.insert(tid);
    } else if (records_threads() && !seen_threads_.count(tid)) {
      WriteThread(packet.writer(), tid, st.tgid, st.name);
    }
  }
  packet->WriteVarInt(ProcessTree::kCollectionEndTimestampFieldNumber, BootTimeNs());
  packet->EndNested();
}

}  // namespace sluice
