#include "user/trace/trace_health.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/ftrace/ftrace_stats.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/cpu_list.h"
#include "sluice/bpf.pb.h"
#include "sluice/ftrace.pb.h"
#include "sluice/service_stats.pb.h"
#include "user/trace/trace_packet_scan.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceStats;
using perfetto::protos::TracePacket;
using perfetto::protos::TraceStats;

constexpr char kLoss[] = "data_loss";
constexpr char kError[] = "error";
constexpr char kInfo[] = "info";
// ftrace_reader_peak_fill_percent is shown from here up (a near miss, as
// user/probes/ftrace/ftrace_watermark.h calls it).
constexpr uint64_t kPeakFillWorthSaying = 75;

struct Collector {
  TraceHealth health;
  FtraceStats ftrace_start, ftrace_end;
  bool has_ftrace_start = false;
  uint64_t ftrace_starts = 0, ftrace_ends = 0;  // One of each per linux.ftrace instance.
  TraceStats trace_stats;
  perfetto::protos::TraceConfig config;  // The first trace_config: says the mode.
  bool has_config = false;
  sluice::protos::BpfStats bpf_end;
  bool has_bpf = false;
  std::map<uint32_t, uint64_t> lost_event_bundles;  // cpu -> bundles
  std::map<uint32_t, uint64_t> dropped_on_sequence;  // seq id -> packets flagged
  std::map<uint32_t, size_t> machine_index;          // machine_id -> health.machines
  std::set<uint32_t> host_relay_stats;
  // A relayed machine's first START_OF_TRACE and last END_OF_TRACE FtraceStats.
  std::map<uint32_t, std::pair<std::optional<FtraceStats>, std::optional<FtraceStats>>> machine_ftrace;
  std::set<uint32_t> sequences;
  std::map<uint32_t, uint64_t> events_by_field;  // FtraceEvent oneof field -> events
  uint64_t unparsable = 0;
  TracePacketScan scan;  // Reused: its vector keeps its capacity.

  void Add(std::string_view bytes) {
    if (!ScanTracePacket(bytes, &scan)) {
      unparsable++;
      return;
    }
    // Only the small packets that carry stats are parsed in full.
    std::optional<TracePacket> stats;
    if ((scan.has_stats || (scan.has_trace_config && !has_config)) &&
        !stats.emplace().ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      unparsable++;
      return;
    }
    if (scan.machine_id != 0) Machine(scan.machine_id).packets++;
    if (scan.has_sequence_id) {
      sequences.insert(scan.sequence_id);
      // The service marks the first packet it reads of every sequence, as
      // Perfetto's buffer does: a loss only when it is not the first packet.
      if (scan.previous_packet_dropped && !scan.first_packet_on_sequence)
        dropped_on_sequence[scan.sequence_id]++;
    }
    if (scan.has_bundle) {
      // A relayed machine's CPU n is not the host's.
      if (scan.bundle_lost_events && scan.machine_id == 0) lost_event_bundles[scan.bundle_cpu]++;
      if (scan.bundle_lost_events && scan.machine_id != 0) Machine(scan.machine_id).ftrace_lost_event_bundles++;
      health.ftrace_events += scan.events;
      for (const auto& [field, n] : scan.events_by_field) events_by_field[field] += n;
    }
    if (stats) AddStats(*stats);
  }

  MachineHealth& Machine(uint32_t machine_id) {
    auto it = machine_index.find(machine_id);
    if (it != machine_index.end()) return health.machines[it->second];
    machine_index[machine_id] = health.machines.size();
    MachineHealth& m = health.machines.emplace_back();
    m.machine_id = machine_id;
    return m;
  }

  static void TakeRelayStats(const sluice::protos::RelayMachineStats& r, MachineHealth* m) {
    m->has_relay_stats = true;
    if (!r.machine_name().empty()) m->name = r.machine_name();
    m->connects = r.connects();
    m->disconnects = r.disconnects();
    m->chunks_dropped = r.chunks_dropped();
    m->packets_dropped = r.packets_dropped();
    m->bytes_dropped = r.bytes_dropped();
    m->chunks_lost_in_transit = r.chunks_lost_in_transit();
    m->clock_offset_ns = r.clock_offset_ns();
    m->clock_error_ns = r.clock_error_ns();
    m->clock_syncs = r.clock_syncs();
    m->max_clock_error_ns = r.max_clock_error_ns();
  }

  // A relayed machine's packet with stats: its clock syncs and the
  // TraceStats the host wrote for it. Nothing of it is the session's.
  void AddMachineStats(const TracePacket& p) {
    MachineHealth& m = Machine(p.machine_id());
    if (p.has_remote_clock_sync()) m.sync_packets++;
    if (p.has_ftrace_stats()) {
      auto& [start, end] = machine_ftrace[p.machine_id()];
      if (p.ftrace_stats().phase() == FtraceStats::START_OF_TRACE && !start) start = p.ftrace_stats();
      if (p.ftrace_stats().phase() == FtraceStats::END_OF_TRACE) end = p.ftrace_stats();
    }
    if (!p.has_trace_stats()) return;
    for (int i = 0; i < p.trace_stats().buffer_stats_size(); ++i)
      m.buffer_chunks_lost[i] = p.trace_stats().buffer_stats(i).trace_writer_packet_loss();
    for (const auto& r : p.trace_stats().sluice_service_stats().relay_machines())
      if (r.machine_id() == p.machine_id() && !host_relay_stats.count(p.machine_id())) TakeRelayStats(r, &m);
  }

  void AddStats(const TracePacket& p) {
    if (p.machine_id() != 0) return AddMachineStats(p);
    if (p.has_trace_config() && !has_config) {
      config = p.trace_config();
      has_config = true;
    }
    if (p.has_ftrace_stats()) {
      if (p.ftrace_stats().phase() == FtraceStats::START_OF_TRACE) {
        // Several ftrace instances each write one; keep the first per phase.
        if (!has_ftrace_start) ftrace_start = p.ftrace_stats();
        has_ftrace_start = true;
        ftrace_starts++;
      } else if (p.ftrace_stats().phase() == FtraceStats::END_OF_TRACE) {
        ftrace_ends++;
        ftrace_end = p.ftrace_stats();
        health.has_ftrace_stats_end = true;
      }
    }
    if (p.has_trace_stats()) {
      trace_stats = p.trace_stats();
      health.has_trace_stats = true;
      // The host's figures of each relayed machine win over the ones the
      // machine's own TraceStats carried.
      for (const auto& r : trace_stats.sluice_service_stats().relay_machines()) {
        host_relay_stats.insert(r.machine_id());
        TakeRelayStats(r, &Machine(r.machine_id()));
      }
    }
    if (p.has_bpf_stats()) {
      bpf_end = p.bpf_stats();
      has_bpf = true;
    }
  }

  void Row(const std::string& name, int64_t idx, const char* severity, const char* source,
           int64_t value, const std::string& explanation) {
    if (value == 0) return;
    health.rows.push_back(HealthRow{name, idx, severity, source, value, explanation});
  }

  // The rows, by stage, in the order `sluice stats` prints them.
  void Finish() {
    health.sequences = sequences.size();
    for (const auto& [field, n] : events_by_field) health.events_by_name[FtraceEventFieldName(field)] += n;
    FileRows();
    ServiceRows();
    RelayRows();
    FtraceRows();
    const FtraceStats* paths = health.has_ftrace_stats_end ? &ftrace_end : has_ftrace_start ? &ftrace_start : nullptr;
    if (paths) {
      for (const auto& c : paths->cpu_stats())
        if (c.has_sluice_read_path()) health.ftrace_read_paths[static_cast<uint32_t>(c.cpu())] = c.sluice_read_path();
    }
    if (has_ftrace_start && ftrace_start.has_sluice_buffer_percent())
      health.ftrace_watermark_start = ftrace_start.sluice_buffer_percent();
    if (health.has_ftrace_stats_end && ftrace_end.has_sluice_buffer_percent())
      health.ftrace_watermark_end = ftrace_end.sluice_buffer_percent();
    if (has_bpf) BpfRows();
  }

  void FileRows() {
    Row("packets_unparsable", -1, kError, "trace file", static_cast<int64_t>(unparsable),
        "packets that are not valid TracePackets: a producer bug; report it");
    if (health.file.truncated)
      Row("trace_file_truncated", -1, kLoss, "trace file", 1,
          "the file ends inside a packet (recorder killed while writing); everything before is valid");
    if (!health.has_trace_stats)
      Row("trace_stats_missing", -1, kError, "service", 1,
          "no TraceStats packet: the recording did not end cleanly, losses after the last flush are unknown");
  }

  // Buffer `i` held its data in memory to the end (no write_into_file) with
  // this fill policy: a ring or discard session, whose losses are the mode
  // at work and need other advice than a streamed buffer's.
  bool InMemory() const { return has_config && !config.write_into_file(); }
  bool RingInMemory(int i) const {
    return InMemory() && (i >= config.buffers_size() ||
                          config.buffers(i).fill_policy() != perfetto::protos::TraceConfig::BufferConfig::DISCARD);
  }

  // The central buffers, the service and the producers' shared memory.
  void ServiceRows() {
    uint64_t central_loss = 0, smb_loss = 0;
    bool all_ring = trace_stats.buffer_stats_size() > 0;
    const auto& faults = trace_stats.sluice_service_stats();
    for (int i = 0; i < trace_stats.buffer_stats_size(); i++) {
      const auto& b = trace_stats.buffer_stats(i);
      // The service added its lost chunks to this figure for upstream's
      // readers (service/service_packets.h); they have their own rows below.
      uint64_t packet_loss = b.trace_writer_packet_loss();
      if (faults.has_chunks_lost_buffer() && faults.chunks_lost_buffer() == static_cast<uint32_t>(i)) {
        const uint64_t chunks = faults.chunks_lost_being_written() + faults.chunks_lost_writer_unknown();
        packet_loss -= std::min(packet_loss, chunks);
      }
      const char* src = "central buffer";
      central_loss += b.chunks_overwritten() + b.chunks_discarded();
      smb_loss += packet_loss;
      all_ring = all_ring && RingInMemory(i);
      if (RingInMemory(i)) {
        Row("traced_buf_chunks_overwritten", i, kInfo, src, static_cast<int64_t>(b.chunks_overwritten()),
            "the ring buffer overwrote its oldest chunks to keep the newest data, as a flight recorder "
            "does; for a longer window raise buffers.size_kb (-b)");
      } else {
        Row("traced_buf_chunks_overwritten", i, kLoss, src, static_cast<int64_t>(b.chunks_overwritten()),
            "the central buffer wrapped before its data reached the file: raise buffers.size_kb (-b) "
            "or lower file_write_period_ms");
      }
      if (InMemory()) {
        Row("traced_buf_chunks_discarded", i, kLoss, src, static_cast<int64_t>(b.chunks_discarded()),
            "the central buffer (fill_policy DISCARD) filled up and kept the oldest data; what came "
            "after is missing: raise buffers.size_kb (-b), or record with --ring to keep the newest "
            "or --stream to keep it all");
      } else {
        Row("traced_buf_chunks_discarded", i, kLoss, src, static_cast<int64_t>(b.chunks_discarded()),
            "the central buffer (fill_policy DISCARD) was full: raise buffers.size_kb (-b) or lower "
            "file_write_period_ms");
      }
      Row("traced_buf_patches_failed", i, kLoss, src, static_cast<int64_t>(b.patches_failed()),
          "a patch arrived after its chunk left the buffer: raise buffers.size_kb or flush_period_ms");
      Row("traced_buf_abi_violations", i, kLoss, src, static_cast<int64_t>(b.abi_violations()),
          "a producer wrote malformed chunks into shared memory: a producer bug");
      Row("traced_buf_trace_writer_packet_loss", i, kLoss, "producer shared memory",
          static_cast<int64_t>(packet_loss),
          "a producer found its shared memory full and dropped packets: raise the shared memory "
          "size (sluice record --smb) or lower drain_period_ms");
    }
    Row("traced_chunks_discarded", -1, kLoss, "service", static_cast<int64_t>(trace_stats.chunks_discarded()),
        "chunks refused by the service (bad target buffer or producer fault)");
    Row("traced_patches_discarded", -1, kLoss, "service", static_cast<int64_t>(trace_stats.patches_discarded()),
        "patches refused by the service");
    Row("traced_invalid_packets", -1, kLoss, "service", static_cast<int64_t>(trace_stats.invalid_packets()),
        "packets dropped by the service as malformed");
    Row("traced_flushes_failed", -1, kError, "service", static_cast<int64_t>(trace_stats.flushes_failed()),
        "a data source did not answer a flush in time: raise flush_timeout_ms");
    if (trace_stats.final_flush_outcome() == TraceStats::FINAL_FLUSH_FAILED)
      Row("traced_final_flush_failed", -1, kLoss, "service", 1,
          "the final flush timed out: the last data of some source may be missing; raise flush_timeout_ms");
    // sluice's own (TraceStats.sluice_service_stats): producer faults.
    Row("producers_disconnected_not_reading", -1, kLoss, "service",
        faults.producers_disconnected_not_reading(),
        "producers dropped because they did not read their socket (a flush timed out unread): "
        "their data after the drop is missing; fix or restart the producer");
    Row("producers_disconnected_for_faults", -1, kLoss, "service",
        faults.producers_disconnected_for_faults(),
        "producers dropped for invalid shared memory or messages: their data after the drop is "
        "missing; a producer bug");
    Row("producers_disconnected", -1, kInfo, "service", faults.producers_disconnected(),
        "producers that went away before the end (their completed chunks were recovered)");
    Row("chunks_lost_being_written", -1, kLoss, "producer shared memory",
        static_cast<int64_t>(faults.chunks_lost_being_written()),
        "chunks a producer was still writing when it went away or the session ended: a producer "
        "stalled or died; raise flush_timeout_ms / data_source_stop_timeout_ms if it was slow");
    smb_loss += faults.chunks_lost_being_written() + faults.chunks_lost_writer_unknown();
    Row("chunks_lost_writer_unknown", -1, kLoss, "producer shared memory",
        static_cast<int64_t>(faults.chunks_lost_writer_unknown()),
        "completed chunks a producer never committed, of a writer it had not registered yet: "
        "the producer died or stalled before its first commit");

    // previous_packet_dropped says a sequence has a gap, not where it came
    // from: blame the stage whose counters above say it lost data.
    const char* source = "producer shared memory";
    const char* severity = kLoss;
    const char* why =
        "packets on this sequence follow a gap that no counter above explains (previous_packet_dropped): "
        "report it";
    if (central_loss && smb_loss) {
      source = "central buffer";
      why = "packets on this sequence follow a loss in shared memory or in the central buffer "
            "(previous_packet_dropped): see the rows above for each";
    } else if (central_loss) {
      source = "central buffer";
      if (all_ring) {
        severity = kInfo;
        why = "packets on this sequence follow chunks the ring buffer overwrote (previous_packet_dropped): "
              "the start of the window it kept";
      } else {
        why = "packets on this sequence follow chunks the central buffer overwrote or discarded "
              "(previous_packet_dropped): see traced_buf_chunks_overwritten / _discarded";
      }
    } else if (smb_loss) {
      why = "packets on this sequence follow a loss (previous_packet_dropped): raise the shared "
            "memory size (sluice record --smb)";
    }
    for (const auto& [seq, n] : dropped_on_sequence)
      Row("packets_dropped_before", seq, severity, source, static_cast<int64_t>(n), why);
  }

  // Another tracer in the same buffer takes events from it; sluice moves to
  // an instance of its own when it sees one at the start
  // (ftrace_buffer_choice.h), so one found here came later.
  void OtherReaderRows() {
    std::set<std::string> readers;
    for (const FtraceStats* s : {&ftrace_start, &ftrace_end})
      for (const std::string& r : s->sluice_other_readers()) readers.insert(r);
    std::string names;
    for (const std::string& r : readers) names += (names.empty() ? "" : ", ") + r;
    Row("ftrace_other_readers", -1, kLoss, "kernel ftrace buffer", static_cast<int64_t>(readers.size()),
        "another tracer read the buffer this trace was recorded from (" + names +
            "), and the events it read are missing here: record while it does not run, or give this trace "
            "its own FtraceConfig.instance_name");
    const std::string& own = ftrace_start.sluice_own_instance();
    if (!own.empty())
      Row("ftrace_own_instance", -1, kInfo, "kernel ftrace buffer", 1,
          "another tracer was reading the top-level ftrace buffer, so sluice recorded from instance " + own +
              " of its own and took none of its events");
  }

  void FtraceRows() {
    // A ring buffer may have overwritten the start-of-trace figures: the
    // kernel counters since boot are no measure of this trace, so the pages
    // that followed a kernel-side loss are the measure.
    const bool start_lost = health.has_ftrace_stats_end && !has_ftrace_start;
    if (start_lost)
      Row("ftrace_stats_start_missing", -1, kInfo, "kernel ftrace buffer", 1,
          "the trace lacks the start-of-trace ftrace figures (a ring buffer overwrote them): kernel "
          "losses are counted as ftrace_bundles_after_lost_events");
    OtherReaderRows();
    // The kernel counters are cumulative; the trace's share is end - start.
    std::map<uint64_t, perfetto::protos::FtraceCpuStats> start_by_cpu;
    for (const auto& c : ftrace_start.cpu_stats()) start_by_cpu[c.cpu()] = c;
    static const FtraceStats kNoFigures;
    for (const auto& c : (start_lost ? kNoFigures : ftrace_end).cpu_stats()) {
      const auto& s = start_by_cpu[c.cpu()];
      auto delta = [](uint64_t end, uint64_t start) {
        return static_cast<int64_t>(end >= start ? end - start : 0);
      };
      int64_t cpu = static_cast<int64_t>(c.cpu());
      // A reader that stopped for a full SMB (sluice's FtraceCpuStats
      // counters) left the loss to the kernel on purpose: the cause is
      // downstream, and so is the fix.
      const bool smb_full = c.sluice_smb_full_waits() != 0;
      Row("ftrace_cpu_overrun_delta", cpu, kLoss, "kernel ftrace buffer",
          delta(c.overrun(), s.overrun()),
          smb_full ? "the kernel's per-CPU buffer wrapped while sluice's reader waited for room in the "
                     "producer's shared memory (ftrace_reader_smb_full_waits): the service fell behind; "
                     "raise the shared memory size (sluice record --smb)"
                   : "the kernel's per-CPU buffer wrapped before sluice read it: raise buffer_size_kb or "
                     "lower drain_period_ms");
      Row("ftrace_reader_smb_full_waits", cpu, kInfo, "ftrace reader",
          static_cast<int64_t>(c.sluice_smb_full_waits()),
          "times this CPU's reader stopped taking pages because the producer's shared memory was full, " +
              std::to_string(c.sluice_smb_full_wait_ms()) +
              " ms in all; the kernel kept the data meanwhile, and what it overwrote is in "
              "ftrace_cpu_overrun_delta");
      // How close the buffer came to wrapping, said only when close: at 75%
      // a reader that wakes at the kernel's default watermark (50%) had a
      // quarter of the buffer between it and a loss.
      const uint64_t buffer_pages = ftrace_end.cpu_buffer_size_pages();
      const uint64_t peak_percent =
          buffer_pages == 0 ? 0 : std::min<uint64_t>(c.sluice_most_pages_per_wake() * 100 / buffer_pages, 100);
      if (c.sluice_most_pages_per_wake() != 0 && buffer_pages != 0)
        health.ftrace_peak_fill_percent[static_cast<uint32_t>(c.cpu())] = peak_percent;
      Row("ftrace_reader_peak_fill_percent", cpu, kInfo, "kernel ftrace buffer",
          peak_percent >= kPeakFillWorthSaying ? static_cast<int64_t>(peak_percent) : 0,
          "the fullest this CPU's buffer was when its reader caught up: " +
              std::to_string(c.sluice_most_pages_per_wake()) + " of its " + std::to_string(buffer_pages) +
              " pages taken in one wake-up; at 100 it wraps and loses events: raise buffer_size_kb "
              "(sluice record -k) or lower drain_buffer_percent");
      Row("ftrace_cpu_commit_overrun_delta", cpu, kLoss, "kernel ftrace buffer",
          delta(c.commit_overrun(), s.commit_overrun()),
          "events lost inside the kernel while writing (nested writers on a full page): raise buffer_size_kb");
      Row("ftrace_cpu_dropped_events_delta", cpu, kLoss, "kernel ftrace buffer",
          delta(c.dropped_events(), s.dropped_events()),
          "events the kernel dropped because the buffer was full in no-overwrite mode: raise buffer_size_kb");
    }
    for (const auto& [cpu, n] : lost_event_bundles)
      Row("ftrace_bundles_after_lost_events", cpu, start_lost ? kLoss : kInfo, "kernel ftrace buffer",
          static_cast<int64_t>(n),
          start_lost ? "pages on this CPU that followed a kernel-side loss: raise buffer_size_kb or lower "
                       "drain_period_ms"
                     : "pages on this CPU that followed a kernel-side loss (counted in ftrace_cpu_overrun_delta)");
    Row("ftrace_parse_errors", -1, kError, "ftrace reader",
        static_cast<int64_t>(ftrace_end.ftrace_parse_errors_size()),
        "pages or records sluice could not decode: report with the kernel version (sluice ftrace-formats)");
    Row("ftrace_unknown_events", -1, kInfo, "ftrace config",
        static_cast<int64_t>(ftrace_end.unknown_ftrace_events_size()),
        "requested events this kernel does not have (see sluice doctor)");
    Row("ftrace_failed_events", -1, kError, "ftrace config",
        static_cast<int64_t>(ftrace_end.failed_ftrace_events_size()),
        "events that exist but could not be enabled: permissions or another tracer");
    if (!ftrace_end.atrace_errors().empty())
      Row("ftrace_atrace_errors", -1, kError, "ftrace config", 1, ftrace_end.atrace_errors());
    // The session ended (TraceStats) but an instance never wrote its end:
    // its producer died or lost sluiced mid-trace. (A file cut short lacks
    // both, and says so in trace_stats_missing.)
    // A snapshot of a running session (sluice clone) ends before its data
    // sources do: expected.
    const uint64_t snapshot_of_session = trace_stats.sluice_service_stats().snapshot_of_session();
    if (health.has_trace_stats && ftrace_starts > ftrace_ends && snapshot_of_session != 0)
      Row("ftrace_stats_end_missing", -1, kInfo, "ftrace data source",
          static_cast<int64_t>(ftrace_starts - ftrace_ends),
          "a snapshot (sluice clone) of session " + std::to_string(snapshot_of_session) +
              ", which was still running: its ftrace data sources had not ended, so kernel-side "
              "losses after their start are not counted here");
    else if (health.has_trace_stats && ftrace_starts > ftrace_ends)
      Row("ftrace_stats_end_missing", -1, kLoss, "ftrace data source",
          static_cast<int64_t>(ftrace_starts - ftrace_ends),
          "ftrace data sources that started but never ended: their producer died or lost sluiced "
          "mid-trace (sluice-probes logs what it restored); what they had not committed is lost, "
          "and kernel-side losses after their start are not counted");
  }

  // Each relayed machine's losses on the way to the host (idx: its
  // machine_id), counted like any other stage's.
  void RelayRows() {
    std::sort(health.machines.begin(), health.machines.end(),
              [](const MachineHealth& a, const MachineHealth& b) { return a.machine_id < b.machine_id; });
    for (MachineHealth& m : health.machines) {
      const int64_t id = m.machine_id;
      // Events its kernel's ring buffer overwrote while the trace ran.
      if (auto it = machine_ftrace.find(m.machine_id); it != machine_ftrace.end() && it->second.second) {
        std::map<uint64_t, uint64_t> start;
        if (it->second.first)
          for (const auto& c : it->second.first->cpu_stats()) start[c.cpu()] = c.overrun();
        for (const auto& c : it->second.second->cpu_stats())
          if (c.overrun() > start[c.cpu()]) m.ftrace_overrun += c.overrun() - start[c.cpu()];
      }
      Row("relay_machine_ftrace_overrun", id, kLoss, "kernel ftrace buffer", static_cast<int64_t>(m.ftrace_overrun),
          "events the machine's kernel ring buffer overwrote before they were read (its FtraceStats, summed over "
          "CPUs): raise buffer_size_kb in the config the machine runs");
      Row("relay_chunks_dropped", id, kLoss, "relay", static_cast<int64_t>(m.chunks_dropped),
          "chunks the machine's relay dropped (" + std::to_string(m.packets_dropped) + " packets, " +
              std::to_string(m.bytes_dropped) +
              " bytes): its queue was full or the link down; give the relay a larger queue or the link more "
              "bandwidth, or record less on that machine");
      Row("relay_chunks_lost_in_transit", id, kLoss, "relay", static_cast<int64_t>(m.chunks_lost_in_transit),
          "chunks cut off when the machine's link to the host broke (" + std::to_string(m.disconnects) +
              " disconnects)");
      Row("relay_machine_ftrace_lost_events", id, kLoss, "kernel ftrace buffer",
          static_cast<int64_t>(m.ftrace_lost_event_bundles),
          "bundles of the machine's ftrace data marked lost_events: its kernel ring buffer overwrote events "
          "before they were read; raise buffer_size_kb in the config the machine runs");
      if (!m.has_relay_stats && m.packets > 0 && health.has_trace_stats)
        Row("relay_stats_missing", id, kError, "relay", 1,
            "the session's TraceStats has no figures for this machine: its losses on the way are unknown");
      if (m.packets > 0 && m.sync_packets == 0)
        Row("remote_clock_sync_missing", id, kError, "relay", 1,
            "no RemoteClockSync for this machine: its timestamps could not be put on the host's timeline "
            "(readers assume both boot clocks agree)");
    }
  }

  void BpfRows() {
    const bool smb_full = bpf_end.smb_full_waits() != 0;
    for (const auto& c : bpf_end.cpu_stats()) {
      Row("bpf_ringbuf_dropped", c.cpu(), kLoss, "BPF ring buffer", static_cast<int64_t>(c.dropped()),
          smb_full ? "the BPF ring buffer was full, and the reader had waited for room in the producer's "
                     "shared memory (bpf_reader_smb_full_waits): if the service fell behind, raise the "
                     "shared memory size (sluice record --smb), else bpf_config.ringbuf_size_kb"
                   : "the BPF ring buffer was full: raise bpf_config.ringbuf_size_kb");
      Row("bpf_decode_errors", c.cpu(), kError, "BPF reader", static_cast<int64_t>(c.decode_errors()),
          "BPF records sluice could not decode: a bug; report it");
    }
    Row("bpf_unaccounted", -1, kLoss, "BPF ring buffer", bpf_end.unaccounted(),
        "records produced but neither delivered nor counted as dropped");
    Row("bpf_reader_smb_full_waits", -1, kInfo, "BPF reader", static_cast<int64_t>(bpf_end.smb_full_waits()),
        "times the reader stopped reading the rings because the producer's shared memory was full, " +
            std::to_string(bpf_end.smb_full_wait_ms()) +
            " ms in all; the rings kept the records meanwhile, and what did not fit is in bpf_ringbuf_dropped");
  }
};

}  // namespace

uint64_t TraceHealth::data_loss_total() const {
  uint64_t total = 0;
  for (const HealthRow& r : rows)
    if (r.severity == kLoss) total += static_cast<uint64_t>(r.value);
  return total;
}

struct TraceHealthCollector::Impl : Collector {};

TraceHealthCollector::TraceHealthCollector() : impl_(std::make_unique<Impl>()) {}
TraceHealthCollector::~TraceHealthCollector() = default;
void TraceHealthCollector::AddPacket(std::string_view packet) { impl_->Add(packet); }
TraceHealth TraceHealthCollector::Finish(const TraceFileSummary& file) {
  impl_->health.file = file;
  impl_->Finish();
  return std::move(impl_->health);
}

StatusOr<TraceHealth> AnalyzeTraceBytes(std::string_view bytes) {
  Collector c;
  SLUICE_RETURN_IF_ERROR(
      ReadTraceBytes(bytes, [&](std::string_view p) { c.Add(p); }, &c.health.file));
  c.Finish();
  return std::move(c.health);
}

StatusOr<TraceHealth> AnalyzeTraceFile(const std::string& path) {
  Collector c;
  SLUICE_RETURN_IF_ERROR(
      ReadTraceFile(path, [&](std::string_view p) { c.Add(p); }, &c.health.file));
  c.Finish();
  return std::move(c.health);
}

std::string FormatHealthTable(const TraceHealth& h) {
  std::ostringstream out;
  char line[512];
  snprintf(line, sizeof(line), "%-36s %5s %-9s %-24s %12s\n", "name", "idx", "severity", "source",
           "value");
  out << line;
  for (const HealthRow& r : h.rows) {
    snprintf(line, sizeof(line), "%-36s %5s %-9s %-24s %12lld\n", r.name.c_str(),
             r.index < 0 ? "-" : std::to_string(r.index).c_str(), r.severity.c_str(),
             r.source.c_str(), static_cast<long long>(r.value));
    out << line << "    " << r.explanation << "\n";
  }
  if (h.rows.empty()) out << "(no losses, no errors)\n";
  return out.str();
}

std::string FormatMachines(const TraceHealth& h) {
  if (h.machines.empty()) return "";
  std::ostringstream out;
  char line[512];
  snprintf(line, sizeof(line), "relayed machines:\n  %-16s %4s %10s %8s %8s %10s %8s %14s %10s %6s\n", "name", "id",
           "packets", "chunks", "packets", "bytes", "chunks", "clock offset", "error", "syncs");
  out << line;
  snprintf(line, sizeof(line), "  %-16s %4s %10s %8s %8s %10s %8s %14s %10s %6s\n", "", "", "", "dropped",
           "dropped", "dropped", "lost", "ns", "bound ns", "");
  out << line;
  for (const MachineHealth& m : h.machines) {
    snprintf(line, sizeof(line), "  %-16s %4u %10llu %8llu %8llu %10llu %8llu %14lld %10llu %6llu\n",
             m.name.empty() ? "(unnamed)" : m.name.c_str(), m.machine_id,
             static_cast<unsigned long long>(m.packets), static_cast<unsigned long long>(m.chunks_dropped),
             static_cast<unsigned long long>(m.packets_dropped), static_cast<unsigned long long>(m.bytes_dropped),
             static_cast<unsigned long long>(m.chunks_lost_in_transit), static_cast<long long>(m.clock_offset_ns),
             static_cast<unsigned long long>(m.clock_error_ns),
             static_cast<unsigned long long>(m.has_relay_stats ? m.clock_syncs : m.sync_packets));
    out << line;
  }
  out << "  (chunks lost: cut off in transit; clock offset: the machine's boot clock minus the host's, true "
         "within +- the error bound)\n";
  return out.str();
}

std::string FormatFtracePeakFill(const TraceHealth& h) {
  std::string text;
  for (const auto& [cpu, percent] : h.ftrace_peak_fill_percent) {
    text += (text.empty() ? "ftrace buffer peak fill: " : ", ") + std::to_string(percent) + "% on CPU " +
            std::to_string(cpu);
  }
  return text.empty() ? text
                      : text + " (the most a reader took in one wake-up; at 100% the buffer wraps and loses events)\n";
}

std::string FormatFtraceWatermark(const TraceHealth& h) {
  const int64_t start = h.ftrace_watermark_start, end = h.ftrace_watermark_end;
  if (start < 0 && end < 0) return "";
  constexpr char kWhat[] = "buffer_percent, how full a CPU's buffer gets before its reader is woken";
  if (start < 0 || end < 0 || start == end)
    return "ftrace reader watermark: " + std::to_string(start < 0 ? end : start) + "% (" + kWhat + ")\n";
  return "ftrace reader watermark: " + std::to_string(start) + "% -> " + std::to_string(end) + "% (" +
         (end < start ? "lowered by sluice: a buffer filled fast or came near full; " : "") + kWhat + ")\n";
}

std::string FormatFtraceReadPaths(const TraceHealth& h) {
  std::map<int, std::vector<uint32_t>> cpus_by_path;
  for (const auto& [cpu, path] : h.ftrace_read_paths) cpus_by_path[path].push_back(cpu);
  std::string text;
  for (const auto& [path, cpus] : cpus_by_path) {
    const char* name = path == sluice::protos::FTRACE_READ_PATH_MAPPED   ? "mapped"
                       : path == sluice::protos::FTRACE_READ_PATH_SPLICE ? "splice"
                       : path == sluice::protos::FTRACE_READ_PATH_MAPPED_AND_SPLICE
                           ? "mapped and splice (the CPU went offline and back)"
                           : "not read";
    text += (text.empty() ? "ftrace read path: " : "; ") + std::string(name) +
            (cpus.size() == 1 ? " on CPU " : " on CPUs ") + FormatCpuList(cpus);
  }
  return text.empty() ? text : text + "\n";
}

}  // namespace sluice
