#include "tests/user/query/multi_machine_test_util.h"

#include <utility>
#include <vector>

#include "perfetto/trace/trace.pb.h"

namespace sluice::testing {
namespace {

using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::FtraceStats;
using perfetto::protos::Trace;
using perfetto::protos::TracePacket;

constexpr uint32_t kBoottime = 6, kMonotonic = 3, kMonotonicRaw = 5, kRealtime = 1;

// A packet of machine `machine` (0: the host, whose packets carry none).
TracePacket* Add(Trace* trace, uint32_t machine, uint32_t sequence) {
  TracePacket* p = trace->add_packet();
  if (machine) p->set_machine_id(machine);
  p->set_trusted_packet_sequence_id(sequence);
  return p;
}

void AddSystemInfo(Trace* trace, uint32_t machine, const std::string& release, uint32_t cpus,
                   const std::string& name) {
  auto* info = Add(trace, machine, 1)->mutable_system_info();
  info->mutable_utsname()->set_sysname("Linux");
  info->mutable_utsname()->set_release(release);
  info->mutable_utsname()->set_version("#1 SMP");
  info->mutable_utsname()->set_machine("x86_64");
  info->set_num_cpus(cpus);
  info->set_page_size(4096);
  // machine_name (17): newer than sluice's copy of SystemInfo.
  if (!name.empty()) info->GetReflection()->MutableUnknownFields(info)->AddLengthDelimited(17, name);
}

// One round of the host's clock sync with a guest: the guest reads its
// clocks at `guest_ts` (BOOTTIME), the host at guest_ts - offset + `lag`,
// the guest again `rtt` later, the host after that. Each clock keeps its
// own distance from BOOTTIME on either side.
void AddClockSync(Trace* trace, uint32_t machine, int64_t guest_ts, int64_t offset, int64_t lag, int64_t rtt) {
  auto* sync = Add(trace, machine, 1)->mutable_remote_clock_sync();
  const int64_t t1c = guest_ts, t1h = guest_ts - offset + lag, t2c = t1c + rtt, t2h = t1h + rtt + 7;
  struct Clock {
    uint32_t id;
    int64_t guest_delta, host_delta;
  };
  const Clock clocks[] = {{kBoottime, 0, 0},
                          {kMonotonic, -10'000'000, -1'000'000},
                          {kMonotonicRaw, -10'000'003, -2'000'000},
                          {kRealtime, 1'700'000'000'000'000'000, 1'700'000'000'000'000'000}};
  for (auto [client, host] : {std::pair{t1c, t1h}, std::pair{t2c, t2h}}) {
    auto* round = sync->add_synced_clocks();
    for (const Clock& c : clocks) {
      auto* cc = round->mutable_client_clocks()->add_clocks();
      cc->set_clock_id(c.id);
      cc->set_timestamp(static_cast<uint64_t>(client + c.guest_delta));
      auto* hc = round->mutable_host_clocks()->add_clocks();
      hc->set_clock_id(c.id);
      hc->set_timestamp(static_cast<uint64_t>(host + c.host_delta));
    }
  }
}

FtraceEventBundle* Bundle(Trace* trace, uint32_t machine, uint32_t sequence, uint32_t cpu) {
  auto* bundle = Add(trace, machine, sequence)->mutable_ftrace_events();
  bundle->set_cpu(cpu);
  return bundle;
}

void Switch(FtraceEventBundle* bundle, uint64_t ts, uint32_t prev_pid, const std::string& prev_comm,
            int64_t prev_state, uint32_t next_pid, const std::string& next_comm) {
  FtraceEvent* e = bundle->add_event();
  e->set_timestamp(ts);
  e->set_pid(prev_pid);
  auto* sw = e->mutable_sched_switch();
  sw->set_prev_comm(prev_comm);
  sw->set_prev_pid(prev_pid);
  sw->set_prev_prio(120);
  sw->set_prev_state(prev_state);
  sw->set_next_comm(next_comm);
  sw->set_next_pid(next_pid);
  sw->set_next_prio(120);
}

void Waking(FtraceEventBundle* bundle, uint64_t ts, uint32_t waker, uint32_t pid, const std::string& comm,
            uint32_t target_cpu) {
  FtraceEvent* e = bundle->add_event();
  e->set_timestamp(ts);
  e->set_pid(waker);
  auto* w = e->mutable_sched_waking();
  w->set_comm(comm);
  w->set_pid(pid);
  w->set_prio(120);
  w->set_success(1);
  w->set_target_cpu(target_cpu);
}

void Frequency(FtraceEventBundle* bundle, uint64_t ts, uint32_t cpu, uint32_t khz) {
  FtraceEvent* e = bundle->add_event();
  e->set_timestamp(ts);
  e->set_pid(0);
  e->mutable_cpu_frequency()->set_cpu_id(cpu);
  e->mutable_cpu_frequency()->set_state(khz);
}

void Print(FtraceEventBundle* bundle, uint64_t ts, uint32_t pid, const std::string& buf) {
  FtraceEvent* e = bundle->add_event();
  e->set_timestamp(ts);
  e->set_pid(pid);
  e->mutable_print()->set_buf(buf);
}

void AddProcesses(Trace* trace, uint32_t machine, uint32_t sequence, uint64_t ts,
                  const std::vector<std::pair<int32_t, std::string>>& processes, int32_t thread, int32_t tgid,
                  const std::string& thread_name) {
  TracePacket* p = Add(trace, machine, sequence);
  p->set_timestamp(ts);
  auto* tree = p->mutable_process_tree();
  for (const auto& [pid, cmdline] : processes) {
    auto* proc = tree->add_processes();
    proc->set_pid(pid);
    proc->set_ppid(pid == 1 ? 0 : 1);
    proc->add_cmdline(cmdline);
  }
  auto* t = tree->add_threads();
  t->set_tid(thread);
  t->set_tgid(tgid);
  t->set_name(thread_name);
}

// A machine's FtraceStats of `phase`: each (cpu, overrun).
void AddFtraceStats(Trace* trace, uint32_t machine, uint64_t ts, FtraceStats::Phase phase,
                    const std::vector<std::pair<uint32_t, uint64_t>>& overruns) {
  TracePacket* p = Add(trace, machine, 10);
  p->set_timestamp(ts);
  p->mutable_ftrace_stats()->set_phase(phase);
  for (auto [cpu, overrun] : overruns) {
    auto* c = p->mutable_ftrace_stats()->add_cpu_stats();
    c->set_cpu(cpu);
    c->set_overrun(overrun);
    c->set_entries(3);
  }
}

// The relay's figures for one machine (sluice's RelayMachineStats).
void FillRelay(sluice::protos::RelayMachineStats* relay, uint32_t machine, const std::string& name,
               uint64_t dropped, uint64_t in_transit) {
  relay->set_machine_id(machine);
  relay->set_machine_name(name);
  relay->set_connects(2);
  relay->set_disconnects(1);
  relay->set_chunks_dropped(dropped);
  relay->set_packets_dropped(dropped * 9);
  relay->set_bytes_dropped(dropped * 4096);
  relay->set_chunks_lost_in_transit(in_transit);
  relay->set_clock_offset_ns(-399'999'000);
  relay->set_clock_error_ns(160);
  relay->set_clock_syncs(2);
  relay->set_max_clock_error_ns(170);
}

}  // namespace

std::string TwoGuestsTrace() {
  Trace trace;
  {
    TracePacket* p = Add(&trace, 0, 1);
    p->set_timestamp(999'000'000);
    auto* snap = p->mutable_clock_snapshot();
    for (auto [id, ts] : {std::pair{kBoottime, 999'000'000ull}, std::pair{kMonotonic, 998'000'000ull},
                          std::pair{kMonotonicRaw, 997'000'000ull},
                          std::pair{kRealtime, 1'700'000'000'999'000'000ull}}) {
      auto* c = snap->add_clocks();
      c->set_clock_id(id);
      c->set_timestamp(ts);
    }
  }
  AddSystemInfo(&trace, 0, "6.18.0-host", 2, "");
  // The service's first syncs, before either guest's data.
  AddClockSync(&trace, 1, 600'000'001, -399'999'937, 111, 251);
  AddClockSync(&trace, 7, 5'000'000'000, 3'999'000'000, 40, 99);
  AddSystemInfo(&trace, 1, "6.1.0-guest", 2, "guest-a");
  // An old kernel: its prev_state bits are laid out otherwise.
  AddSystemInfo(&trace, 7, "4.4.0-guest", 1, "guest-b");
  AddProcesses(&trace, 0, 2, 999'500'000, {{1, "/sbin/init"}, {100, "qemu-system-x86_64"}}, 102, 100, "CPU 0/KVM");
  {
    auto* info = Add(&trace, 1, 11)->mutable_cpu_info();
    for (int i = 0; i < 2; ++i) {
      auto* cpu = info->add_cpus();
      cpu->set_processor("QEMU Virtual CPU version 2.5+");
      cpu->set_capacity(1024);
    }
  }
  AddFtraceStats(&trace, 1, 600'010'000, FtraceStats::START_OF_TRACE, {{0, 5}, {1, 0}});
  AddProcesses(&trace, 1, 11, 600'050'000, {{1, "/init"}, {100, "guestd"}}, 102, 100, "guestd-worker");
  AddProcesses(&trace, 7, 21, 5'000'100'000, {{1, "/init"}, {100, "sensor"}}, 102, 100, "sensor-poll");

  auto* g0 = Bundle(&trace, 1, 10, 0);
  Waking(g0, 600'090'000, 0, 100, "guestd", 0);
  Switch(g0, 600'100'000, 0, "swapper/0", 0, 100, "guestd");
  Print(g0, 600'150'000, 100, "B|100|work\n");
  Frequency(g0, 600'160'000, 0, 2'000'000);
  Switch(g0, 600'200'000, 100, "guestd", 1, 102, "guestd-worker");
  auto* g1 = Bundle(&trace, 1, 10, 1);
  Switch(g1, 600'120'000, 0, "swapper/1", 0, 55, "kworker/1:0");
  Switch(g1, 600'130'000, 55, "kworker/1:0", 1, 0, "swapper/1");

  auto* h0 = Bundle(&trace, 0, 3, 0);
  Switch(h0, 1'000'050'000, 0, "swapper/0", 0, 102, "CPU 0/KVM");
  Frequency(h0, 1'000'060'000, 0, 3'000'000);
  Switch(h0, 1'000'300'000, 102, "CPU 0/KVM", 0x80, 0, "swapper/0");
  auto* h1 = Bundle(&trace, 0, 3, 1);
  Switch(h1, 1'000'080'000, 0, "swapper/1", 0, 100, "qemu-system-x86");
  Switch(h1, 1'000'400'000, 100, "qemu-system-x86", 1, 0, "swapper/1");

  auto* b0 = Bundle(&trace, 7, 20, 0);
  Switch(b0, 5'000'200'000, 0, "swapper/0", 0, 102, "sensor-poll");
  Print(b0, 5'000'210'000, 102, "B|100|poll\n");
  Print(b0, 5'000'220'000, 102, "E|100\n");
  Print(b0, 5'000'230'000, 102, "not an atrace line\n");
  Switch(b0, 5'000'300'000, 102, "sensor-poll", 0x80, 0, "swapper/0");

  // guest-a's clock drifts: 1 us further behind at the second sync.
  AddClockSync(&trace, 1, 600'500'000, -399'998'937, 97, 301);
  auto* g2 = Bundle(&trace, 1, 10, 0);
  // Before the second sync's point on the guest's clock: the first offset.
  Switch(g2, 600'300'000, 102, "guestd-worker", 1, 100, "guestd");
  Print(g2, 600'310'000, 100, "E|100\n");
  // After it: the second.
  Switch(g2, 600'700'000, 100, "guestd", 1, 0, "swapper/0");

  // guest-a's kernel ring buffer overwrote events: 4 on CPU 0, 2 on CPU 1.
  AddFtraceStats(&trace, 1, 600'900'000, FtraceStats::END_OF_TRACE, {{0, 9}, {1, 2}});

  // Per machine, what it lost on the way (the service writes these before
  // its own TraceStats), then the session's.
  {
    auto* stats = Add(&trace, 1, 1)->mutable_trace_stats();
    stats->add_buffer_stats()->set_trace_writer_packet_loss(3);
    stats->add_buffer_stats()->set_trace_writer_packet_loss(1);
    FillRelay(stats->mutable_sluice_service_stats()->add_relay_machines(), 1, "guest-a", 3, 1);
  }
  {
    auto* stats = Add(&trace, 7, 1)->mutable_trace_stats();
    stats->add_buffer_stats()->set_trace_writer_packet_loss(0);
    FillRelay(stats->mutable_sluice_service_stats()->add_relay_machines(), 7, "guest-b", 0, 0);
  }
  {
    auto* stats = Add(&trace, 0, 1)->mutable_trace_stats();
    auto* buf = stats->add_buffer_stats();
    buf->set_buffer_size(1 << 20);
    buf->set_bytes_written(4096);
    buf->set_chunks_written(1);
    stats->set_producers_connected(3);
    FillRelay(stats->mutable_sluice_service_stats()->add_relay_machines(), 1, "guest-a", 3, 1);
    FillRelay(stats->mutable_sluice_service_stats()->add_relay_machines(), 7, "guest-b", 0, 0);
  }
  return trace.SerializeAsString();
}

std::string HostOnlyTrace() {
  Trace trace;
  AddSystemInfo(&trace, 0, "6.18.0-host", 2, "");
  AddProcesses(&trace, 0, 2, 999'500'000, {{1, "/sbin/init"}, {100, "qemu-system-x86_64"}}, 102, 100, "CPU 0/KVM");
  auto* h0 = Bundle(&trace, 0, 3, 0);
  Switch(h0, 1'000'050'000, 0, "swapper/0", 0, 102, "CPU 0/KVM");
  Frequency(h0, 1'000'060'000, 0, 3'000'000);
  Switch(h0, 1'000'300'000, 102, "CPU 0/KVM", 1, 0, "swapper/0");
  auto* stats = Add(&trace, 0, 1)->mutable_trace_stats();
  stats->add_buffer_stats()->set_buffer_size(1 << 20);
  return trace.SerializeAsString();
}

}  // namespace sluice::testing
