#include "user/query/importer/process_stats_importer.h"

#include "user/query/importer/proto_wire_reader.h"

namespace sluice {
namespace {

// ProcessStats.Process field numbers (protos/perfetto/trace/ps/process_stats.proto).
constexpr uint32_t kPid = 1;
constexpr uint32_t kThreads = 11;
constexpr uint32_t kIsPeakRssResettable = 12;
constexpr uint32_t kChromePeakResidentSetKb = 14;
constexpr uint32_t kFds = 15;
constexpr uint32_t kOomScoreAdj = 10;

}  // namespace

ProcessStatsImporter::ProcessStatsImporter(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks)
    : storage_(storage), processes_(processes), tracks_(tracks) {
  StringPool& s = storage->strings;
  const StringId memory = s.Intern("process_memory"), memory_key = s.Intern("process_memory_key");
  const StringId smaps = s.Intern("smaps"), smaps_key = s.Intern("smaps_key");
  const StringId runtime = s.Intern("proc_stat_runtime"), runtime_key = s.Intern("proc_stat_runtime_key");
  const StringId chrome = s.Intern("chrome_process_stats"), chrome_key = s.Intern("key");
  // field, type, dimension key, the name's suffix after the prefix, scale.
  struct Def {
    uint32_t field;
    StringId type, key;
    const char* prefix;
    const char* suffix;
    double scale;
  };
  const Def defs[] = {
      {2, memory, memory_key, "mem.", "virt", 1024},
      {3, memory, memory_key, "mem.", "rss", 1024},
      {4, memory, memory_key, "mem.", "rss.anon", 1024},
      {5, memory, memory_key, "mem.", "rss.file", 1024},
      {6, memory, memory_key, "mem.", "rss.shmem", 1024},
      {7, memory, memory_key, "mem.", "swap", 1024},
      {8, memory, memory_key, "mem.", "locked", 1024},
      {9, memory, memory_key, "mem.", "rss.watermark", 1024},
      {24, memory, memory_key, "mem.", "dmabuf_rss", 1024},
      {13, chrome, chrome_key, "chrome.", "private_footprint_kb", 1024},
      {kChromePeakResidentSetKb, chrome, chrome_key, "chrome.", "peak_resident_set_kb", 1024},
      {16, smaps, smaps_key, "mem.smaps.", "rss", 1024},
      {17, smaps, smaps_key, "mem.smaps.", "pss", 1024},
      {18, smaps, smaps_key, "mem.smaps.", "pss.anon", 1024},
      {19, smaps, smaps_key, "mem.smaps.", "pss.file", 1024},
      {20, smaps, smaps_key, "mem.smaps.", "pss.smem", 1024},  // Upstream's spelling: smem.
      {23, smaps, smaps_key, "mem.smaps.", "swap.pss", 1024},
      {21, runtime, runtime_key, "runtime.", "user_ns", 1},
      {22, runtime, runtime_key, "runtime.", "kernel_ns", 1},
  };
  for (const Def& d : defs) {
    CounterTrack& c = counters_[d.field];
    c.type = d.type;
    c.name = s.Intern(std::string(d.prefix) + d.suffix);
    c.key = d.key;
    c.key_value = s.Intern(d.suffix);
    c.scale = d.scale;
    c.known = true;
  }
  CounterTrack& oom = counters_[kOomScoreAdj];
  oom.type = oom.name = s.Intern("oom_score_adj");
  oom.known = true;
}

bool ProcessStatsImporter::Import(std::string_view bytes, int64_t ts) {
  // Upstream reads each packet twice: its Chrome parser first, then its
  // system-probes parser. The order decides which processes and tracks are
  // created first, so the ids their tables show.
  for (Pass pass : {Pass::kChrome, Pass::kSystem}) {
    ProtoWireReader stats(bytes);
    WireField f;
    while (stats.Next(&f)) {
      if (f.number == 1 && f.type == WireType::kBytes) ImportProcess(f.bytes, ts, pass);
    }
    if (!stats.ok()) return false;
  }
  return true;
}

void ProcessStatsImporter::ImportProcess(std::string_view bytes, int64_t ts, Pass pass) {
  // The pid may come after the fields it qualifies: found first (0 if absent, as upstream).
  int64_t pid = 0;
  ProtoWireReader find_pid(bytes);
  WireField p;
  while (find_pid.Next(&p))
    if (p.number == kPid && p.type == WireType::kVarint) pid = static_cast<int32_t>(p.value);
  ProtoWireReader fields(bytes);
  while (fields.Next(&p)) {
    if (p.number == kPid) continue;
    const bool chrome = p.number >= kIsPeakRssResettable && p.number <= kChromePeakResidentSetKb;
    if (pass == Pass::kChrome) {
      if (chrome) ImportCounter(p, pid, ts);
      continue;
    }
    if (chrome) {
      // chrome_peak_resident_set_kb again: upstream's system-probes parser
      // does not skip it (see the header).
      if (p.number == kChromePeakResidentSetKb) {
        processes_->OnProcessStatsProcess(pid);
        unknown_counters_++;
      }
      continue;
    }
    if (p.number == kThreads && p.type == WireType::kBytes) {
      ProtoWireReader thread(p.bytes);
      WireField t;
      while (thread.Next(&t))
        if (t.number == 1 && t.type == WireType::kVarint) processes_->OnProcessStatsThread(static_cast<int32_t>(t.value), pid);
      continue;
    }
    ImportCounter(p, pid, ts);
  }
}

void ProcessStatsImporter::ImportCounter(const WireField& p, int64_t pid, int64_t ts) {
  const uint32_t upid = processes_->OnProcessStatsProcess(pid);
  if (p.number == kFds || p.number == kIsPeakRssResettable) return;
  const CounterTrack* c = p.number < std::size(counters_) ? &counters_[p.number] : nullptr;
  if (!c || !c->known || p.type != WireType::kVarint) {
    unknown_counters_++;
    return;
  }
  const double value = p.number == kOomScoreAdj ? static_cast<double>(static_cast<int64_t>(p.value))
                                                  : static_cast<double>(p.value) * c->scale;
  storage_->ExtendBounds(ts);  // trace_bounds cover the rows, as upstream's.
  storage_->counter.Add(ts, tracks_->SingletonTrack(c->type, c->name, /*counter=*/true, upid, c->key, c->key_value), value);
}

}  // namespace sluice
