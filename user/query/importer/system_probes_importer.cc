#include "user/query/importer/system_probes_importer.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>

#include "perfetto/common/sys_stats_counters.pb.h"
#include "user/query/importer/proto_wire_reader.h"

namespace sluice {

SystemProbesImporter::SystemProbesImporter(TraceStorage* storage, TrackTracker* tracks)
    : storage_(storage), tracks_(tracks) {}

void SystemProbesImporter::AddCpus(std::set<uint32_t>* cpus) const {
  for (const auto& [machine, list] : cpu_info_)
    for (const CpuInfoEntry& c : list) cpus->insert(c.cpu);
}

void SystemProbesImporter::OnInterruptInfo(std::string_view bytes) {
  // InterruptInfo: irq_mapping 1 {irq_id 1, name 2}.
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number != 1 || f.type != WireType::kBytes) continue;
    ProtoWireReader mapping(f.bytes);
    WireField m;
    std::optional<int64_t> irq;
    std::optional<std::string_view> name;
    while (mapping.Next(&m)) {
      if (m.number == 1 && m.type == WireType::kVarint) irq = static_cast<int64_t>(static_cast<uint32_t>(m.value));
      if (m.number == 2 && m.type == WireType::kBytes) name = m.bytes;
    }
    if (!mapping.ok() || !irq || !name || !named_irqs_.insert(*irq).second) continue;
    storage_->interrupt_mapping.irq_id.push_back(*irq);
    storage_->interrupt_mapping.name.push_back(storage_->strings.Intern(*name));
  }
  if (!reader.ok()) unparsable_++;
}

void SystemProbesImporter::OnCpuInfo(std::string_view bytes, uint32_t machine) {
  // CpuInfo: cpus 1 (processor 1, frequencies 2, capacity 3,
  // arm_identifier 4 {implementer 1, architecture 2, variant 3, part 4,
  // revision 5}, features 5); a CPU's number is its place in the list.
  std::vector<CpuInfoEntry>& cpu_info = cpu_info_[machine];
  cpu_info.clear();
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number != 1 || f.type != WireType::kBytes) continue;
    CpuInfoEntry cpu;
    cpu.cpu = machine * CpuTable::kMaxCpusPerMachine + static_cast<uint32_t>(cpu_info.size());
    ProtoWireReader fields(f.bytes);
    WireField c;
    while (fields.Next(&c)) {
      if (c.number == 1 && c.type == WireType::kBytes) cpu.processor = std::string(c.bytes);
      else if (c.number == 2) AppendVarints(c, &cpu.frequencies);
      else if (c.number == 3 && c.type == WireType::kVarint) cpu.capacity = static_cast<int64_t>(c.value);
      else if (c.number == 5 && c.type == WireType::kVarint) cpu.features = c.value;
      else if (c.number == 4 && c.type == WireType::kBytes) {
        cpu.arm.emplace();
        ProtoWireReader arm(c.bytes);
        WireField a;
        while (arm.Next(&a))
          if (a.type == WireType::kVarint && a.number >= 1 && a.number <= 5) (*cpu.arm)[a.number - 1] = a.value;
      }
    }
    cpu_info.push_back(std::move(cpu));
  }
  if (!reader.ok()) unparsable_++;
}

void SystemProbesImporter::AddCpuInfoRows() {
  for (const auto& [machine, list] : cpu_info_) AddCpuInfoRows(list);
}

void SystemProbesImporter::AddCpuInfoRows(const std::vector<CpuInfoEntry>& cpu_info) {
  // As upstream: CPUs are clustered by capacity when every CPU has one,
  // else by their highest frequency when every CPU has some, else all in
  // cluster 0; a cluster is a run of equal values in ascending order. The
  // frequencies are listed in that (capacity) order.
  if (cpu_info.empty()) return;
  std::vector<const CpuInfoEntry*> order;
  for (const CpuInfoEntry& c : cpu_info) order.push_back(&c);
  // By place in the list (a relayed machine's CPUs are ucpus).
  const uint32_t first = cpu_info.front().cpu;
  std::vector<int64_t> cluster(cpu_info.size(), 0);
  auto assign = [&](std::vector<std::pair<uint64_t, uint32_t>> by_value) {
    std::stable_sort(by_value.begin(), by_value.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t id = 0;
    for (size_t i = 0; i < by_value.size(); ++i) {
      if (i > 0 && by_value[i].first > by_value[i - 1].first) id++;
      cluster[by_value[i].second - first] = id;
    }
  };
  const bool all_capacity = std::all_of(cpu_info.begin(), cpu_info.end(), [](const CpuInfoEntry& c) { return c.capacity != kNullInt; });
  const bool all_freqs = std::all_of(cpu_info.begin(), cpu_info.end(), [](const CpuInfoEntry& c) { return !c.frequencies.empty(); });
  if (all_capacity) {
    std::stable_sort(order.begin(), order.end(), [](const CpuInfoEntry* a, const CpuInfoEntry* b) { return a->capacity < b->capacity; });
    std::vector<std::pair<uint64_t, uint32_t>> v;
    for (const CpuInfoEntry& c : cpu_info) v.emplace_back(static_cast<uint64_t>(c.capacity), c.cpu);
    assign(std::move(v));
  } else if (all_freqs) {
    std::vector<std::pair<uint64_t, uint32_t>> v;
    for (const CpuInfoEntry& c : cpu_info) v.emplace_back(*std::max_element(c.frequencies.begin(), c.frequencies.end()), c.cpu);
    assign(std::move(v));
  }
  StringPool& s = storage_->strings;
  CpuTable& t = storage_->cpu;
  static constexpr const char* kArmKeys[] = {"arm_cpu_implementer", "arm_cpu_architecture", "arm_cpu_variant",
                                             "arm_cpu_part", "arm_cpu_revision"};
  for (const CpuInfoEntry* c : order) {
    auto it = std::lower_bound(t.cpu.begin(), t.cpu.end(), c->cpu);
    if (it == t.cpu.end() || *it != c->cpu) continue;
    const auto row = static_cast<size_t>(it - t.cpu.begin());
    if (!c->processor.empty()) t.processor[row] = s.Intern(c->processor);
    t.cluster_id[row] = cluster[c->cpu - first];
    t.capacity[row] = c->capacity;
    for (uint64_t freq : c->frequencies) {
      storage_->cpu_freq.ucpu.push_back(c->cpu);
      storage_->cpu_freq.freq.push_back(static_cast<int64_t>(freq));
    }
    std::vector<Arg> args;
    if (c->arm)
      for (size_t i = 0; i < 5; ++i) args.push_back({s.Intern(kArmKeys[i]), ArgType::kUint, static_cast<int64_t>((*c->arm)[i]), 0});
    if (c->features & 1) args.push_back({s.Intern("cpu_features.mte"), ArgType::kBool, 1, 0});
    if (c->features & 2) args.push_back({s.Intern("cpu_features.mte3"), ArgType::kBool, 1, 0});
    if (c->features != 0)
      args.push_back({s.Intern("cpu_features.raw_bitmap"), ArgType::kUint, static_cast<int64_t>(c->features), 0});
    if (c->features >> 2) cpu_unknown_features_++;
    if (!args.empty()) t.arg_set_id[row] = storage_->args.Add(&args);
  }
}

// /proc/meminfo's key of each MeminfoCounters value (the kernel's names;
// 34-38 are Android's), "" for one this table does not have.
std::string_view SystemProbesImporter::MeminfoKeyName(uint64_t key) {
  static constexpr const char* kKeys[] = {
      "",           "MemTotal",     "MemFree",      "MemAvailable",   "Buffers",        "Cached",
      "SwapCached", "Active",       "Inactive",     "Active(anon)",   "Inactive(anon)", "Active(file)",
      "Inactive(file)", "Unevictable", "Mlocked",   "SwapTotal",      "SwapFree",       "Dirty",
      "Writeback",  "AnonPages",    "Mapped",       "Shmem",          "Slab",           "SReclaimable",
      "SUnreclaim", "KernelStack",  "PageTables",   "CommitLimit",    "Committed_AS",   "VmallocTotal",
      "VmallocUsed", "VmallocChunk", "CmaTotal",    "CmaFree",        "Gpu",            "Zram",
      "Misc",       "ION_heap",     "ION_heap_pool"};
  return key < std::size(kKeys) ? kKeys[key] : "";
}

// /proc/vmstat's key of a VmstatCounters value: the enum's name without
// VMSTAT_, lower case, which is how the enum was made from the kernel's keys.
std::string SystemProbesImporter::VmstatKeyName(uint64_t key) {
  if (key == 0 || key > INT32_MAX) return "";
  const auto* value = perfetto::protos::VmstatCounters_descriptor()->FindValueByNumber(static_cast<int>(key));
  if (value == nullptr) return "";
  std::string name = value->name().substr(std::string_view("VMSTAT_").size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

void SystemProbesImporter::OnSysStats(std::string_view bytes, int64_t ts) {
  // SysStats: meminfo 1 and vmstat 2 (key 1, value 2), cpu_stat 3,
  // devfreq 10, buddy_info 12, psi 14, slab_info 18 (read where used),
  // num_forks 4, num_irq_total 5, num_irq 6, num_softirq_total 7,
  // num_softirq 8 (irq 1, count 2), cpufreq_khz 11, disk_stat 13 (device_name 1, read_sectors 2, read_time_ms 3,
  // write_sectors 4, write_time_ms 5, discard_sectors 6, discard_time_ms 7,
  // flush_count 8, flush_time_ms 9), thermal_zone 15 (name 1, temp 2,
  // type 3), cpuidle_state 16 (cpu_id 1, cpuidle_state_entry 2: state 1,
  // duration_us 2), gpufreq_mhz 17. In upstream's order of the kinds, which
  // decides the tracks' ids.
  StringPool& s = storage_->strings;
  auto each = [&](uint32_t number, auto&& fn) {
    ProtoWireReader reader(bytes);
    WireField f;
    while (reader.Next(&f))
      if (f.number == number) fn(f);
    if (!reader.ok()) unparsable_++;
  };
  auto counter = [&](uint32_t track, double value) {
    storage_->ExtendBounds(ts);
    storage_->counter.Add(ts, track, value);
  };
  // key 1, value 2 of MeminfoValue / VmstatValue / InterruptCount.
  auto key_value = [](std::string_view bytes, uint64_t* key, uint64_t* value) {
    ProtoWireReader r(bytes);
    WireField v;
    while (r.Next(&v)) {
      if (v.type != WireType::kVarint) continue;
      if (v.number == 1) *key = v.value;
      if (v.number == 2) *value = v.value;
    }
  };
  each(1, [&](const WireField& f) {  // meminfo: kB, as bytes
    if (f.type != WireType::kBytes) return;
    uint64_t key = 0, value = 0;
    key_value(f.bytes, &key, &value);
    const std::string_view name = MeminfoKeyName(key);
    if (name.empty()) {
      meminfo_unknown_keys_++;
      return;
    }
    counter(tracks_->DimensionsTrack(s.Intern("meminfo"), s.Intern(name), /*counter=*/true,
                                     {{s.Intern("meminfo_key"), ArgType::kString, s.Intern(name), 0}},
                                     s.Intern("bytes")),
            static_cast<double>(value) * 1024);
  });
  each(10, [&](const WireField& f) {  // devfreq: key 1 (the device), value 2
    if (f.type != WireType::kBytes) return;
    std::string_view device;
    uint64_t value = 0;
    ProtoWireReader r(f.bytes);
    WireField v;
    while (r.Next(&v)) {
      if (v.number == 1 && v.type == WireType::kBytes) device = v.bytes;
      if (v.number == 2 && v.type == WireType::kVarint) value = v.value;
    }
    counter(tracks_->DimensionsTrack(s.Intern("clock_frequency"), s.Intern(std::string(device) + " Frequency"),
                                     /*counter=*/true, {{s.Intern("linux_device"), ArgType::kString, s.Intern(device), 0}}),
            static_cast<double>(value));
  });
  uint32_t cpufreq_cpu = 0;  // cpufreq_khz's index is its CPU
  each(11, [&](const WireField& f) {  // cpufreq_khz, by CPU: the ftrace cpufreq tracks
    std::vector<uint64_t> khz;
    AppendVarints(f, &khz);
    for (uint64_t v : khz)
      counter(tracks_->CpuCounterTrack(s.Intern("cpu_frequency"), s.Intern("cpufreq"), cpufreq_cpu++),
              static_cast<double>(v));
  });
  each(2, [&](const WireField& f) {  // vmstat
    if (f.type != WireType::kBytes) return;
    uint64_t key = 0, value = 0;
    key_value(f.bytes, &key, &value);
    const std::string name = VmstatKeyName(key);
    if (name.empty()) {
      vmstat_unknown_keys_++;
      return;
    }
    counter(tracks_->DimensionsTrack(s.Intern("vmstat"), s.Intern(name), /*counter=*/true,
                                     {{s.Intern("vmstat_key"), ArgType::kString, s.Intern(name), 0}}),
            static_cast<double>(value));
  });
  each(3, [&](const WireField& f) {  // cpu_stat: CpuTimes, cpu_id 1, then the times 2-9 (ns)
    if (f.type != WireType::kBytes) return;
    static constexpr const char* kTimes[] = {"user_ns",    "user_nice_ns", "system_mode_ns", "idle_ns",
                                             "io_wait_ns", "irq_ns",       "softirq_ns",     "steal_ns"};
    std::optional<uint64_t> cpu;
    std::array<uint64_t, 8> times{};
    ProtoWireReader r(f.bytes);
    WireField v;
    while (r.Next(&v)) {
      if (v.type != WireType::kVarint) continue;
      if (v.number == 1) cpu = v.value;
      else if (v.number >= 2 && v.number <= 9) times[v.number - 2] = v.value;
    }
    if (!cpu) {
      invalid_cpu_times_++;
      return;
    }
    for (size_t i = 0; i < times.size(); ++i) {
      counter(tracks_->DimensionsTrack(s.Intern("cpustat"), s.Intern(std::string("cpu.times.") + kTimes[i]),
                                       /*counter=*/true,
                                       {{s.Intern("cpu"), ArgType::kInt, static_cast<int64_t>(*cpu), 0},
                                        {s.Intern("cpustat_key"), ArgType::kString, s.Intern(kTimes[i]), 0}},
                                       kNullStringId, static_cast<uint32_t>(*cpu)),
              static_cast<double>(times[i]));
    }
  });
  // Plain loop variables, not structured bindings: clang 14 cannot capture those.
  for (const auto& kind : {std::pair{6u, "num_irq"}, std::pair{8u, "num_softirq"}}) {
    const char* type = kind.second;
    each(kind.first, [&](const WireField& f) {  // InterruptCount: irq 1, count 2
      if (f.type != WireType::kBytes) return;
      uint64_t irq = 0, count = 0;
      key_value(f.bytes, &irq, &count);
      const auto id = static_cast<int64_t>(static_cast<int32_t>(irq));
      counter(tracks_->DimensionsTrack(s.Intern(type), s.Intern(std::string(type) + " (id: " + std::to_string(id) + ")"),
                                       /*counter=*/true, {{s.Intern("irq"), ArgType::kInt, id, 0}}),
              static_cast<double>(count));
    });
  }
  for (const auto& kind : {std::pair{4u, "num_forks"}, std::pair{5u, "num_irq_total"},
                           std::pair{7u, "num_softirq_total"}}) {
    const char* name = kind.second;
    each(kind.first, [&](const WireField& f) {
      if (f.type != WireType::kVarint) return;
      counter(tracks_->SingletonTrack(s.Intern(name), s.Intern(name), /*counter=*/true), static_cast<double>(f.value));
    });
  }
  each(12, [&](const WireField& f) {  // buddy_info: node 1, zone 2, order_pages 3 (free chunks per order)
    if (f.type != WireType::kBytes) return;
    std::string_view node, zone;
    std::vector<uint64_t> pages;
    ProtoWireReader r(f.bytes);
    WireField v;
    while (r.Next(&v)) {
      if (v.number == 1 && v.type == WireType::kBytes) node = v.bytes;
      if (v.number == 2 && v.type == WireType::kBytes) zone = v.bytes;
      if (v.number == 3) AppendVarints(v, &pages);
    }
    for (size_t order = 0; order < pages.size() && order < 32; ++order) {
      const uint64_t chunk_kb = (uint64_t{1} << order) * page_size_ / 1024;
      const std::string name = "mem.buddyinfo[" + std::string(node) + "][" + std::string(zone) + "][" +
                               std::to_string(static_cast<uint32_t>(chunk_kb)) + " kB]";
      counter(tracks_->DimensionsTrack(s.Intern("buddyinfo"), s.Intern(name), /*counter=*/true,
                                      {{s.Intern("buddyinfo_node"), ArgType::kString, s.Intern(node), 0},
                                       {s.Intern("buddyinfo_zone"), ArgType::kString, s.Intern(zone), 0},
                                       {s.Intern("buddyinfo_chunk_size_kb"), ArgType::kUint,
                                        static_cast<uint32_t>(chunk_kb), 0}}),
              static_cast<double>(static_cast<uint32_t>(pages[order])));
    }
  });
  each(13, [&](const WireField& f) {
    if (f.type != WireType::kBytes) return;
    std::string device;
    std::array<int64_t, 8> cur{};  // read/write/discard sectors, flush count, their times
    ProtoWireReader disk(f.bytes);
    WireField d;
    while (disk.Next(&d)) {
      if (d.number == 1 && d.type == WireType::kBytes) device = std::string(d.bytes);
      static constexpr int kSlot[] = {-1, -1, 0, 4, 1, 5, 2, 6, 3, 7};
      if (d.type == WireType::kVarint && d.number >= 2 && d.number <= 9) cur[kSlot[d.number]] = static_cast<int64_t>(d.value);
    }
    auto [it, first] = disk_stats_.try_emplace(device, cur);
    if (first) return;  // Rates need a previous sample.
    const std::array<int64_t, 8> prev = it->second;
    it->second = cur;
    auto mb = [&](int i) { return static_cast<double>(cur[i] - prev[i]) / 2048.0; };
    auto rate = [&](double amount, int i) {
      const int64_t ms = cur[i] - prev[i];
      return ms == 0 ? 0.0 : amount * 1000.0 / static_cast<double>(ms);
    };
    const double read = mb(0), write = mb(1), discard = mb(2);
    const std::tuple<const char*, const char*, double> rows[] = {
        {"read_amount", "MB", read},           {"read_throughput", "MB/s", rate(read, 4)},
        {"write_amount", "MB", write},         {"write_throughput", "MB/s", rate(write, 5)},
        {"discard_amount", "MB", discard},     {"discard_throughput", "MB/s", rate(discard, 6)},
        {"flush_amount", "count", static_cast<double>(cur[3] - prev[3])},
        {"flush_time", "ms", static_cast<double>(cur[7] - prev[7])}};
    for (const auto& [counter_name, unit, value] : rows) {
      const std::string name = "diskstat.[" + device + "]." + counter_name;
      counter(tracks_->DimensionsTrack(s.Intern("diskstat"), s.Intern(name), /*counter=*/true,
                                      {{s.Intern("device_name"), ArgType::kString, s.Intern(device), 0},
                                       {s.Intern("counter_name"), ArgType::kString, s.Intern(counter_name), 0}},
                                      s.Intern(unit)),
              value);
    }
  });
  each(14, [&](const WireField& f) {  // psi: resource 1, total_ns 2 (time stalled on it)
    if (f.type != WireType::kBytes) return;
    static constexpr const char* kResources[] = {"resource.unspecified", "cpu.some", "cpu.full", "io.some",
                                                 "io.full",              "mem.some", "mem.full"};
    uint64_t resource = 0, total_ns = 0;
    key_value(f.bytes, &resource, &total_ns);
    if (resource >= std::size(kResources)) {
      // Upstream also stops reading the rest of the packet here; sluice
      // skips only the sample it cannot name.
      psi_unknown_resource_++;
      return;
    }
    counter(tracks_->DimensionsTrack(s.Intern("psi"), s.Intern(std::string("psi.") + kResources[resource]),
                                    /*counter=*/true,
                                    {{s.Intern("psi_resource"), ArgType::kString, s.Intern(kResources[resource]), 0}}),
            static_cast<double>(total_ns));
  });
  each(15, [&](const WireField& f) {
    if (f.type != WireType::kBytes) return;
    std::string_view type;
    int64_t temp = 0;
    ProtoWireReader zone(f.bytes);
    WireField z;
    while (zone.Next(&z)) {
      if (z.number == 3 && z.type == WireType::kBytes) type = z.bytes;
      if (z.number == 2 && z.type == WireType::kVarint) temp = static_cast<int64_t>(z.value);
    }
    counter(tracks_->DimensionsTrack(s.Intern("thermal_temperature_sys"), s.Intern(type), /*counter=*/true,
                                    {{s.Intern("thermal_zone"), ArgType::kString, s.Intern(type), 0}}, s.Intern("C")),
            static_cast<double>(temp));
  });
  each(16, [&](const WireField& f) {
    if (f.type != WireType::kBytes) return;
    int64_t cpu = 0;
    ProtoWireReader find_cpu(f.bytes);
    WireField c;
    while (find_cpu.Next(&c))
      if (c.number == 1 && c.type == WireType::kVarint) cpu = static_cast<int64_t>(c.value);
    ProtoWireReader entries(f.bytes);
    while (entries.Next(&c)) {
      if (c.number != 2 || c.type != WireType::kBytes) continue;
      std::string_view state;
      int64_t duration_us = 0;
      ProtoWireReader entry(c.bytes);
      WireField e;
      while (entry.Next(&e)) {
        if (e.number == 1 && e.type == WireType::kBytes) state = e.bytes;
        if (e.number == 2 && e.type == WireType::kVarint) duration_us = static_cast<int64_t>(e.value);
      }
      const std::string name = "cpuidle" + std::to_string(cpu) + "." + std::string(state);
      counter(tracks_->DimensionsTrack(s.Intern("cpu_idle_state"), s.Intern(name), /*counter=*/true,
                                      {{s.Intern("cpu"), ArgType::kInt, cpu, 0},
                                       {s.Intern("state"), ArgType::kString, s.Intern(state), 0}},
                                      s.Intern("us"), static_cast<uint32_t>(cpu)),
              static_cast<double>(duration_us));
    }
  });
  each(17, [&](const WireField& f) {
    std::vector<uint64_t> values;
    AppendVarints(f, &values);
    for (uint64_t mhz : values) {
      // Upstream says kHz although the values are MHz, unscaled; so does this.
      counter(tracks_->DimensionsTrack(s.Intern("gpu_frequency"), s.Intern("gpufreq"), /*counter=*/true,
                                      {{s.Intern("ugpu"), ArgType::kInt, 0, 0}, {s.Intern("gpu"), ArgType::kInt, 0, 0}},
                                      s.Intern("kHz")),
              static_cast<double>(mhz));
    }
  });
  each(18, [&](const WireField& f) {  // slab_info: name 1, pages_per_slab 2, num_slabs 3
    if (f.type != WireType::kBytes) return;
    std::string_view name;
    uint64_t pages_per_slab = 0, num_slabs = 0;
    ProtoWireReader r(f.bytes);
    WireField v;
    while (r.Next(&v)) {
      if (v.number == 1 && v.type == WireType::kBytes) name = v.bytes;
      if (v.number == 2 && v.type == WireType::kVarint) pages_per_slab = static_cast<uint32_t>(v.value);
      if (v.number == 3 && v.type == WireType::kVarint) num_slabs = static_cast<uint32_t>(v.value);
    }
    storage_->ExtendBounds(ts);
    std::vector<Arg> args = {{s.Intern("num_slabs"), ArgType::kUint, static_cast<int64_t>(num_slabs), 0},
                             {s.Intern("pages_per_slab"), ArgType::kUint, static_cast<int64_t>(pages_per_slab), 0}};
    storage_->counter.Add(ts,
                          tracks_->DimensionsTrack(s.Intern("slabinfo"), s.Intern("mem.slab." + std::string(name)),
                                                   /*counter=*/true,
                                                   {{s.Intern("slab_name"), ArgType::kString, s.Intern(name), 0}},
                                                   s.Intern("bytes")),
                          static_cast<double>(pages_per_slab) * static_cast<double>(num_slabs) *
                              static_cast<double>(page_size_),
                          storage_->args.Add(&args));
  });
}

void SystemProbesImporter::OnBattery(std::string_view bytes, int64_t ts) {
  // BatteryCounters: charge_counter_uah 1, capacity_percent 2 (float),
  // current_ua 3, current_avg_ua 4, name 5, energy_counter_uwh 6,
  // voltage_uv 7.
  std::optional<int64_t> charge, current, current_avg, energy, voltage;
  std::optional<float> capacity;
  std::string_view name;
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    const auto value = static_cast<int64_t>(f.value);
    switch (f.number) {
      case 1: if (f.type == WireType::kVarint) charge = value; break;
      case 2:
        if (f.type == WireType::kFixed32) {
          const auto bits = static_cast<uint32_t>(f.value);
          float v;
          memcpy(&v, &bits, sizeof(v));
          capacity = v;
        }
        break;
      case 3: if (f.type == WireType::kVarint) current = value; break;
      case 4: if (f.type == WireType::kVarint) current_avg = value; break;
      case 5: if (f.type == WireType::kBytes) name = f.bytes; break;
      case 6: if (f.type == WireType::kVarint) energy = value; break;
      case 7: if (f.type == WireType::kVarint) voltage = value; break;
      default: break;
    }
  }
  if (!reader.ok()) {
    unparsable_++;
    return;
  }
  StringPool& s = storage_->strings;
  auto add = [&](std::string_view counter, double v) {
    // No name (one battery): a NULL dimension, as upstream stores "".
    std::vector<Arg> dims = {{s.Intern("battery_name"), ArgType::kString, name.empty() ? kNullStringId : s.Intern(name), 0},
                             {s.Intern("counter_name"), ArgType::kString, s.Intern(counter), 0}};
    const std::string track_name =
        name.empty() ? "batt." + std::string(counter) : "batt." + std::string(name) + "." + std::string(counter);
    storage_->ExtendBounds(ts);
    storage_->counter.Add(ts, tracks_->DimensionsTrack(s.Intern("battery_counter"), s.Intern(track_name),
                                                       /*counter=*/true, std::move(dims)),
                          v);
  };
  // Gauges that count energy, not charge: charge = energy / voltage.
  // Products that overflow (only a malformed trace has them) add nothing.
  int64_t product = 0;
  if (charge) add("charge_uah", static_cast<double>(*charge));
  else if (energy && voltage && *voltage > 0 && !__builtin_mul_overflow(*energy, int64_t{1000000}, &product))
    add("charge_uah", static_cast<double>(product / *voltage));
  if (capacity) add("capacity_pct", static_cast<double>(*capacity));
  if (current) add("current_ua", static_cast<double>(*current));
  if (current_avg) add("current.avg_ua", static_cast<double>(*current_avg));
  if (voltage) add("voltage_uv", static_cast<double>(*voltage));
  // Power as a positive figure whether charging or not.
  if (current && voltage && !__builtin_mul_overflow(*current, *voltage, &product))
    add("power_mw", std::abs(static_cast<double>(product / 1000000000)));
}

void SystemProbesImporter::OnInitialDisplayState(std::string_view bytes, int64_t ts) {
  // InitialDisplayState: display_state 1 (android.view.Display.STATE_*).
  ProtoWireReader reader(bytes);
  WireField f;
  int64_t state = 0;
  while (reader.Next(&f))
    if (f.number == 1 && f.type == WireType::kVarint) state = static_cast<int32_t>(f.value);
  if (!reader.ok()) {
    unparsable_++;
    return;
  }
  StringPool& s = storage_->strings;
  storage_->ExtendBounds(ts);
  storage_->counter.Add(ts, tracks_->SingletonTrack(s.Intern("screen_state"), s.Intern("ScreenState"), true),
                        static_cast<double>(state));
}

}  // namespace sluice
