#include "user/probes/process_stats/process_stats_data_source.h"

#include <dirent.h>
#include <time.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
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
  if (config_.scan_all_processes_on_start()) ScanAndWriteNew();
  writer_->Flush();
}

void ProcessStatsDataSource::Flush() {
  ScanAndWriteNew();
  writer_->Flush();
}

void ProcessStatsDataSource::Stop() { Flush(); }

size_t ProcessStatsDataSource::ScanAndWriteNew() {
  size_t written = 0;
  auto packet = writer_->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kProcessTreeFieldNumber);
  for (pid_t pid : NumericEntries(proc_root_)) {
    std::string dir = proc_root_ + "/" + std::to_string(pid);
    if (!seen_processes_.count(pid)) {
      ProcStatus st;
      if (!ReadStatus(dir + "/status", &st)) continue;  // Gone already.
      seen_processes_.insert(pid);
      packet->BeginNested(ProcessTree::kProcessesFieldNumber);
      packet->WriteInt(ProcessTree::Process::kPidFieldNumber, pid);
      packet->WriteInt(ProcessTree::Process::kPpidFieldNumber, st.ppid);
      if (st.uid >= 0) packet->WriteInt(ProcessTree::Process::kUidFieldNumber, st.uid);
      // cmdline is NUL-separated; kernel threads have none: use the comm.
      // A process that exited since the directory scan has no cmdline: empty.
      std::string cmdline = ReadFile(dir + "/cmdline").value_or("");
      if (cmdline.empty()) {
        packet->WriteString(ProcessTree::Process::kCmdlineFieldNumber, st.name);
        packet->WriteVarInt(ProcessTree::Process::kCmdlineIsCommFieldNumber, 1);
      } else {
        size_t start = 0;
        while (start < cmdline.size()) {
          size_t end = cmdline.find('\0', start);
          if (end == std::string::npos) end = cmdline.size();
          packet->WriteString(ProcessTree::Process::kCmdlineFieldNumber,
                              std::string_view(cmdline).substr(start, end - start));
          start = end + 1;
        }
      }
      packet->EndNested();
      processes_written_++;
      written++;
    }
    if (!config_.record_thread_names() && !config_.scan_all_processes_on_start()) continue;
    for (pid_t tid : NumericEntries(dir + "/task")) {
      if (seen_threads_.count(tid)) continue;
      ProcStatus st;
      if (!ReadStatus(dir + "/task/" + std::to_string(tid) + "/status", &st)) continue;
      seen_threads_.insert(tid);
      if (tid == pid) continue;  // The main thread is the process entry.
      packet->BeginNested(ProcessTree::kThreadsFieldNumber);
      packet->WriteInt(ProcessTree::Thread::kTidFieldNumber, tid);
      packet->WriteInt(ProcessTree::Thread::kTgidFieldNumber, pid);
      packet->WriteString(ProcessTree::Thread::kNameFieldNumber, st.name);
      packet->EndNested();
      threads_written_++;
      written++;
    }
  }
  packet->WriteVarInt(ProcessTree::kCollectionEndTimestampFieldNumber, BootTimeNs());
  packet->EndNested();
  return written;
}

}  // namespace sluice
