#include "user/probes/process_stats/process_stats_data_source.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "perfetto/trace/ps/process_tree.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/clock.h"
#include "shm/base/file_util.h"

namespace sluice {
namespace {

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
};
bool ReadStatus(const std::string& path, ProcStatus* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Name:\t", 0) == 0) out->name = line.substr(6);
    else if (line.rfind("Tgid:\t", 0) == 0) out->tgid = atoi(line.c_str() + 6);
    else if (line.rfind("PPid:\t", 0) == 0) out->ppid = atoi(line.c_str() + 6);
    else if (line.rfind("Uid:\t", 0) == 0) out->uid = atoi(line.c_str() + 5);
  }
  return out->tgid != 0;
}

}  // namespace

ProcessStatsDataSource::ProcessStatsDataSource(const perfetto::protos::ProcessStatsConfig& config,
                                               std::unique_ptr<TraceWriter> writer,
                                               std::string proc_root)
    : config_(config), writer_(std::move(writer)), proc_root_(std::move(proc_root)) {}

void ProcessStatsDataSource::Start() {
  // /proc/self names us by our pid in the namespace /proc lists.
  char self[32];
  const ssize_t n = readlink((proc_root_ + "/self").c_str(), self, sizeof(self));
  proc_is_our_pid_namespace_ =
      n > 0 && std::string_view(self, static_cast<size_t>(n)) == std::to_string(getpid());
  if (config_.scan_all_processes_on_start()) ScanAndWriteNew();
  writer_->Flush();
}

void ProcessStatsDataSource::Flush() {
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
  writer_->Flush();
}

long ProcessStatsDataSource::ReadLastPid() const {
  // "0.52 0.58 0.59 2/301 12345": the last field is the last pid allocated.
  auto text = ReadFile(proc_root_ + "/loadavg", 256);
  if (!text.ok()) return -1;
  const size_t space = text->find_last_of(' ');
  if (space == std::string::npos) return -1;
  char* end = nullptr;
  const long pid = strtol(text->c_str() + space + 1, &end, 10);
  if (end == text->c_str() + space + 1 || (*end != '\n' && *end != '\0') || pid < 0) return -1;
  return pid;
}

void ProcessStatsDataSource::Stop() { Flush(); }

void ProcessStatsDataSource::WriteProcess(ProtoWriter* tree, pid_t pid, pid_t ppid, int uid,
                                          const std::string& comm, const std::string& dir) {
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
      WriteProcess(packet.writer(), pid, st.ppid, st.uid, st.name, dir);
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
      if (!seen_processes_.count(tid)) WriteProcess(packet.writer(), tid, st.ppid, st.uid, st.name, dir);
      if (records_threads()) seen_threads_.insert(tid);
    } else if (records_threads() && !seen_threads_.count(tid)) {
      WriteThread(packet.writer(), tid, st.tgid, st.name);
    }
  }
  packet->WriteVarInt(ProcessTree::kCollectionEndTimestampFieldNumber, BootTimeNs());
  packet->EndNested();
}

}  // namespace sluice
