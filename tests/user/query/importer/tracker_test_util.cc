#include "tests/user/query/importer/tracker_test_util.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace sluice {
namespace {

// trace_processor_shell's CSV: integers bare, strings quoted, NULL as
// "[NULL]".
class Row {
 public:
  Row& Int(int64_t v, bool null = false) {
    return Cell(null ? std::string("\"[NULL]\"") : std::to_string(v));
  }
  Row& Str(const StringPool& pool, StringId id) {
    return Cell("\"" + std::string(id == kNullStringId ? "[NULL]" : pool.Get(id)) + "\"");
  }
  std::string Done() { return line_ + "\n"; }

 private:
  Row& Cell(const std::string& s) {
    if (!line_.empty()) line_ += ',';
    line_ += s;
    return *this;
  }
  std::string line_;
};

std::vector<size_t> Order(size_t n, auto less) {
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), less);
  return idx;
}

}  // namespace

std::string TrackerFeeder::SchedCsv() const {
  const SchedSliceTable& s = storage.sched;
  const ThreadTable& t = storage.thread;
  std::string out = "\"ts\",\"dur\",\"cpu\",\"tid\",\"name\",\"end_state\",\"priority\"\n";
  for (size_t i : Order(s.size(), [&](size_t a, size_t b) {
         return s.ts[a] != s.ts[b] ? s.ts[a] < s.ts[b] : s.cpu[a] < s.cpu[b];
       })) {
    out += Row()
               .Int(s.ts[i])
               .Int(s.dur[i])
               .Int(s.cpu[i])
               .Int(t.tid[s.utid[i]])
               .Str(storage.strings, t.name[s.utid[i]])
               .Str(storage.strings, s.end_state[i])
               .Int(s.priority[i])
               .Done();
  }
  return out;
}

std::string TrackerFeeder::ThreadStateCsv() const {
  const ThreadStateTable& s = storage.thread_state;
  const ThreadTable& t = storage.thread;
  std::string out = "\"ts\",\"dur\",\"cpu\",\"tid\",\"state\",\"io_wait\",\"waker_tid\"\n";
  for (size_t i : Order(s.size(), [&](size_t a, size_t b) {
         if (s.ts[a] != s.ts[b]) return s.ts[a] < s.ts[b];
         if (t.tid[s.utid[a]] != t.tid[s.utid[b]]) return t.tid[s.utid[a]] < t.tid[s.utid[b]];
         return storage.strings.Get(s.state[a]) < storage.strings.Get(s.state[b]);
       })) {
    uint32_t waker = s.waker_utid[i];
    out += Row()
               .Int(s.ts[i])
               .Int(s.dur[i])
               .Int(s.cpu[i], s.cpu[i] == kNullU32)
               .Int(t.tid[s.utid[i]])
               .Str(storage.strings, s.state[i])
               .Int(s.io_wait[i], s.io_wait[i] < 0)
               .Int(waker == kNullU32 ? 0 : t.tid[waker], waker == kNullU32)
               .Done();
  }
  return out;
}

std::string TrackerFeeder::ThreadCsv() const {
  const ThreadTable& t = storage.thread;
  const ProcessTable& p = storage.process;
  std::string out =
      "\"utid\",\"tid\",\"name\",\"start_ts\",\"end_ts\",\"pid\",\"is_main_thread\"\n";
  for (size_t i = 0; i < t.size(); i++) {
    out += Row()
               .Int(static_cast<int64_t>(i))
               .Int(t.tid[i])
               .Str(storage.strings, t.name[i])
               .Int(t.start_ts[i], t.start_ts[i] == kNullInt)
               .Int(t.end_ts[i], t.end_ts[i] == kNullInt)
               .Int(t.upid[i] == kNullU32 ? 0 : p.pid[t.upid[i]], t.upid[i] == kNullU32)
               .Int(t.is_main_thread[i], t.is_main_thread[i] < 0)
               .Done();
  }
  return out;
}

std::string TrackerFeeder::ProcessCsv() const {
  const ProcessTable& p = storage.process;
  std::string out = "\"upid\",\"pid\",\"name\",\"cmdline\",\"start_ts\",\"end_ts\",\"ppid\",\"uid\"\n";
  for (size_t i = 0; i < p.size(); i++) {
    uint32_t parent = p.parent_upid[i];
    out += Row()
               .Int(static_cast<int64_t>(i))
               .Int(p.pid[i])
               .Str(storage.strings, p.name[i])
               .Str(storage.strings, p.cmdline[i])
               .Int(p.start_ts[i], p.start_ts[i] == kNullInt)
               .Int(p.end_ts[i], p.end_ts[i] == kNullInt)
               .Int(parent == kNullU32 ? 0 : p.pid[parent], parent == kNullU32)
               .Int(p.uid[i], p.uid[i] == kNullInt)
               .Done();
  }
  return out;
}

// tests/data/query/sched_full.textproto, fed in timestamp order. Expected
// rows are what upstream trace_processor_shell v58.2 printed for that trace:
//   protoc -Iprotos --encode=perfetto.protos.Trace protos/perfetto/trace/trace.proto
//     < tests/data/query/sched_full.textproto > t.pftrace
//   trace_processor_shell -q tests/data/query/tracker_tables.sql t.pftrace
// It covers: idle slices, S / R+ / I / Z / invalid end states (6.18 layout),
// a waking of a running task (ignored) and of a preempted one (R+ closed),
// a waker that is the idle task, a wakee never seen before, task_newtask for
// a thread and a fork, task_rename, a tid reused after sched_process_free, a
// switch whose prev_pid does not match (mismatched_sched_switch_tids), and
// rows still open at the end.
void FeedSchedFull(TrackerFeeder& f) {
  f.sched.SetKernelVersion(6, 18);
  f.TreeProcess(1, 0, {"/sbin/init"}, false, 0);
  f.TreeProcess(2, 0, {"kthreadd"}, true, 0);
  f.TreeProcess(50, 2, {"kworker/0:1-events"}, true, 0);
  f.TreeProcess(100, 1, {"/bin/app", "--x"}, false, 1000);
  f.TreeProcess(300, 1, {"rewritten name args"}, false, 1000);
  f.processes.OnProcessTreeThread(101, 100, "worker");
  f.Switch(2000, 0, 0, "swapper/0", 120, 0, 100, "app", 120);
  f.Switch(2010, 1, 0, "swapper/1", 120, 0, 101, "worker", 120);
  f.Waking(2100, 100, 101, "worker");
  f.Switch(2150, 1, 101, "worker", 120, 1, 0, "swapper/1", 120);
  f.Switch(2200, 0, 100, "app", 120, 1, 101, "worker", 110);
  f.Newtask(2300, 101, 102, "worker", 4001536);   // CLONE_THREAD
  f.Newtask(2400, 101, 200, "worker", 18874385);  // fork
  f.Switch(2500, 0, 101, "worker", 110, 0x100, 102, "worker", 120);
  f.Waking(2600, 102, 101, "worker");
  f.Rename(102, 102, "renamed");
  f.Switch(2800, 0, 102, "renamed", 120, 0x80, 200, "worker", 120);
  f.Rename(200, 200, "child");
  f.Waking(2950, 0, 100, "app");
  f.Switch(3000, 0, 200, "child", 120, 0x20, 0, "swapper/0", 120);
  f.Switch(3050, 1, 0, "swapper/1", 120, 0, 100, "app", 120);
  f.Free(3100, 0, 200);
  f.Switch(3150, 1, 100, "app", 120, 0x402, 0, "swapper/1", 120);
  f.Switch(3200, 0, 0, "swapper/0", 120, 0, 200, "reuse", 120);
  f.Waking(3250, 0, 100, "app");
  f.Waking(3260, 0, 400, "new");
  f.Switch(3300, 0, 999, "bogus", 120, 2, 0, "swapper/0", 120);
  f.sched.Finish(3300);
}


// tests/data/query/process.textproto. Covers: a fork and a CLONE_THREAD
// clone by a thread whose process is not known yet (resolved when
// process_tree places it), process_tree names (argv[0], a single field cut at
// the space, kworker suffix dropped), a thread of a process never listed, a
// second scan with another ppid (kept: reparenting), task_rename of a main
// thread (process renamed) and of a thread named by process_tree (kept), the
// main thread freed (process ends, its threads die: the tids get new utids),
// and a free of an unknown tid (no row).
void FeedProcess(TrackerFeeder& f) {
  f.sched.SetKernelVersion(6, 12);
  f.Newtask(500, 700, 701, "daemon", 18874385);
  f.Newtask(600, 700, 702, "daemon", 4001536);
  f.TreeProcess(1, 0, {"init"}, false, 0);
  f.TreeProcess(700, 1, {"/usr/bin/daemon", "-f"}, false, 0);
  f.TreeProcess(800, 1, {"a b"}, false, 5);
  f.TreeProcess(801, 2, {"kworker/u8:3+flush"}, true, 0);
  f.processes.OnProcessTreeThread(702, 700, "thr-pt");
  f.processes.OnProcessTreeThread(901, 900, "lonely");
  f.TreeProcess(800, 700, {"b"}, false, 6);
  f.TreeProcess(850, 800, {"c"}, false, kNullInt);
  f.Rename(701, 701, "helper");
  f.Rename(702, 702, "thr2");
  f.Free(2200, 0, 700);
  f.Switch(2300, 0, 0, "swapper/0", 120, 0, 702, "thr2", 120);
  f.Switch(2400, 0, 702, "thr2", 120, 1, 700, "daemon", 120);
  f.Free(2500, 0, 999);
  f.sched.Finish(2500);
}

}  // namespace sluice
