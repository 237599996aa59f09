// ftrace page parsing + encoding cost, against libtraceevent decoding the
// same pages in the same binary.
//
//   make bench && build/bench/ftrace_page_bench
//
// Pages: 16 x 4 KiB of sched_switch (60 records each, as the host kernel
// writes them, ~10 distinct comms), of ftrace/print (trace_marker writes of
// 20..60 bytes), and the pages captured from the host kernel in
// tests/data/ftrace/ (sched_switch + sched_waking + print mix). Formats:
// tests/data/kernel-formats/host-6.18.
//
// sluice: FtracePageEncoder::EncodePages() into a TraceWriter that writes to
// a reused buffer (the cost of the SMB chunk hand-off is not counted; it is
// per chunk, not per event). libtraceevent: kbuffer walks the records, and
// each sched_switch field is read with tep_read_number_field() (comms by
// pointer), i.e. decoding only, no output encoding.
//
// Counters: ns_per_page and ns_per_event (CPU time).
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <traceevent/event-parse.h>
// kbuffer.h has no extern "C" guard.
extern "C" {
#include <traceevent/kbuffer.h>
}

#include "shm/trace_writer.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_page_encoder.h"

namespace sluice {
namespace {

constexpr const char* kTree = "tests/data/kernel-formats/host-6.18/events";
constexpr size_t kPageSize = 4096;
constexpr size_t kPages = 16;

// Writes every packet over the same big buffer.
class ReusedBufferTraceWriter : public TraceWriter, public ProtoWriterSink {
 public:
  static constexpr size_t kSize = 8 << 20;
  ReusedBufferTraceWriter() : buf_(new uint8_t[kSize]) {}
  void Flush() override {}
  uint16_t writer_id() const override { return 1; }
  uint64_t packets_lost() const override { return 0; }
  ByteRange GetNewRange(ProtoWriter*, uint8_t*) override {
    return ByteRange{buf_.get(), buf_.get() + kSize};
  }
  uint64_t bytes() const { return bytes_; }

 protected:
  ProtoWriter* BeginPacket() override {
    writer_.Reset(ByteRange{buf_.get(), buf_.get() + kSize}, this);
    return &writer_;
  }
  void EndPacket() override { bytes_ += writer_.bytes_written(); }

 private:
  std::unique_ptr<uint8_t[]> buf_;
  ProtoWriter writer_;
  uint64_t bytes_ = 0;
};

std::string ReadFile(const std::string& path) {
  std::string s;
  if (!ReadTracefsFile(path, &s).ok()) {
    fprintf(stderr, "cannot read %s (run from the project root)\n", path.c_str());
    abort();
  }
  return s;
}

const FtraceFormatTable& Table() {
  static FtraceFormatTable* table = [] {
    auto t = FtraceFormatTable::Load(
        kTree, {"sched/sched_switch", "sched/sched_waking", "ftrace/print"}, nullptr);
    if (!t.ok()) abort();
    return new FtraceFormatTable(std::move(*t));
  }();
  return *table;
}

void Put32(std::vector<uint8_t>& page, size_t& pos, uint32_t v) {
  memcpy(page.data() + 16 + pos, &v, 4);
  pos += 4;
}

// Pages of records of one kind, laid out like the kernel does.
std::vector<uint8_t> BuildPages(bool print) {
  const FtraceFormatTable& t = Table();
  const FtraceEventFormat* sw = t.FindByName("sched", "sched_switch");
  const FtraceEventFormat* pr = t.FindByName("ftrace", "print");
  const char* comms[] = {"swapper/1", "kworker/1:1", "bash", "sshd", "Xorg", "chrome",
                         "rcu_preempt", "ksoftirqd/1", "systemd", "clang++"};
  std::vector<uint8_t> out;
  uint64_t ts = 1000000000;
  int n = 0;
  for (size_t p = 0; p < kPages; p++) {
    std::vector<uint8_t> page(kPageSize, 0);
    memcpy(page.data(), &ts, 8);
    size_t pos = 0;
    for (;;) {
      std::vector<uint8_t> rec;
      if (!print) {
        rec.assign(sw->min_size, 0);
        auto set = [&](const char* name, const void* v, size_t len) {
          const FtraceFieldFormat* f = sw->FindField(name);
          memcpy(rec.data() + f->offset, v, std::min<size_t>(len, f->size));
        };
        uint16_t id = static_cast<uint16_t>(sw->id);
        int32_t pid = 1000 + n % 37, prio = 120;
        int64_t state = n % 3 == 0 ? 1 : 0;
        set("common_type", &id, 2);
        set("common_pid", &pid, 4);
        set("prev_comm", comms[n % 10], strlen(comms[n % 10]));
        set("prev_pid", &pid, 4);
        set("prev_prio", &prio, 4);
        set("prev_state", &state, 8);
        set("next_comm", comms[(n + 3) % 10], strlen(comms[(n + 3) % 10]));
        pid += 7;
        set("next_pid", &pid, 4);
        set("next_prio", &prio, 4);
      } else {
        rec.assign(pr->min_size, 0);
        uint16_t id = static_cast<uint16_t>(pr->id);
        memcpy(rec.data(), &id, 2);
        std::string s = "B|" + std::to_string(1000 + n % 50) + "|slice" +
                        std::string(static_cast<size_t>(n % 40), 'x') + "\n";
        rec.insert(rec.end(), s.begin(), s.end());
        rec.push_back(0);
      }
      while (rec.size() % 4) rec.push_back(0);
      if (pos + 4 + rec.size() > kPageSize - 16) break;
      uint32_t delta = 2000 + static_cast<uint32_t>(n % 5000);
      Put32(page, pos, (delta << 5) | static_cast<uint32_t>(rec.size() / 4));
      memcpy(page.data() + 16 + pos, rec.data(), rec.size());
      pos += rec.size();
      ts += delta;
      n++;
    }
    uint64_t commit = pos;
    memcpy(page.data() + 8, &commit, 8);
    out.insert(out.end(), page.begin(), page.end());
  }
  return out;
}

std::vector<uint8_t> CapturedPages() {
  std::vector<uint8_t> out;
  for (const char* f : {"tests/data/ftrace/sluice_capture_light_cpu0.hex",
                        "tests/data/ftrace/sluice_capture_light_cpu1.hex"}) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      size_t colon = line.find(':');
      std::string digits;
      for (char c : line.substr(colon + 1, 40))
        if (isxdigit(static_cast<unsigned char>(c))) digits.push_back(c);
      for (size_t i = 0; i + 1 < digits.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoi(digits.substr(i, 2), nullptr, 16)));
    }
  }
  return out;
}

size_t CountEvents(const std::vector<uint8_t>& pages) {
  FtracePageEncoder enc(&Table(), 0, FtraceEncodeOptions());
  ReusedBufferTraceWriter w;
  enc.EncodePages(pages.data(), pages.size() / kPageSize, kPageSize, &w);
  return enc.stats().events;
}

void Report(benchmark::State& state, size_t pages, size_t events) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  state.counters["ns_per_page"] = benchmark::Counter(
      static_cast<double>(pages) * 1e-9, benchmark::Counter::kIsIterationInvariantRate |
                                             benchmark::Counter::kInvert);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(events) * 1e-9, benchmark::Counter::kIsIterationInvariantRate |
                                              benchmark::Counter::kInvert);
}

void RunSluice(benchmark::State& state, const std::vector<uint8_t>& pages, bool compact) {
  FtraceEncodeOptions opt;
  opt.compact_sched = compact;
  FtracePageEncoder enc(&Table(), 0, opt);
  ReusedBufferTraceWriter w;
  const size_t n = pages.size() / kPageSize;
  for (auto _ : state) {
    enc.EncodePages(pages.data(), n, kPageSize, &w);
    benchmark::DoNotOptimize(w.bytes());
  }
  if (enc.stats().parse_errors) state.SkipWithError("parse errors");
  Report(state, n, CountEvents(pages));
  state.counters["bytes_per_event"] =
      static_cast<double>(w.bytes()) / static_cast<double>(enc.stats().events);
}

// libtraceevent, parsing the same format files.
struct Tep {
  tep_handle* tep = nullptr;
  tep_event* sched_switch = nullptr;
  tep_event* print = nullptr;
  tep_format_field* common_type = nullptr;
  tep_format_field *prev_pid, *prev_prio, *prev_state, *next_pid, *next_prio, *prev_comm,
      *next_comm, *ip, *buf;
  Tep() {
    tep = tep_alloc();
    tep_set_long_size(tep, 8);
    tep_set_page_size(tep, static_cast<int>(kPageSize));
    std::string hp = ReadFile(std::string(kTree) + "/header_page");
    tep_parse_header_page(tep, hp.data(), hp.size(), 8);
    std::string sw = ReadFile(std::string(kTree) + "/sched/sched_switch/format");
    std::string wk = ReadFile(std::string(kTree) + "/sched/sched_waking/format");
    std::string pr = ReadFile(std::string(kTree) + "/ftrace/print/format");
    tep_parse_event(tep, sw.data(), sw.size(), "sched");
    tep_parse_event(tep, wk.data(), wk.size(), "sched");
    tep_parse_event(tep, pr.data(), pr.size(), "ftrace");
    sched_switch = tep_find_event_by_name(tep, "sched", "sched_switch");
    print = tep_find_event_by_name(tep, "ftrace", "print");
    if (!sched_switch || !print) abort();
    common_type = tep_find_common_field(sched_switch, "common_type");
    prev_pid = tep_find_field(sched_switch, "prev_pid");
    prev_prio = tep_find_field(sched_switch, "prev_prio");
    prev_state = tep_find_field(sched_switch, "prev_state");
    next_pid = tep_find_field(sched_switch, "next_pid");
    next_prio = tep_find_field(sched_switch, "next_prio");
    prev_comm = tep_find_field(sched_switch, "prev_comm");
    next_comm = tep_find_field(sched_switch, "next_comm");
    ip = tep_find_field(print, "ip");
    buf = tep_find_field(print, "buf");
  }
  ~Tep() { tep_free(tep); }
};

void RunLibtraceevent(benchmark::State& state, const std::vector<uint8_t>& pages) {
  static Tep* t = new Tep();
  kbuffer* kbuf = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
  const size_t n = pages.size() / kPageSize;
  std::vector<uint8_t> copy = pages;  // kbuffer wants non-const pages.
  size_t events = 0;
  for (auto _ : state) {
    uint64_t sum = 0;
    events = 0;
    for (size_t p = 0; p < n; p++) {
      kbuffer_load_subbuffer(kbuf, copy.data() + p * kPageSize);
      unsigned long long ts = 0;
      for (void* data = kbuffer_read_event(kbuf, &ts); data;
           data = kbuffer_next_event(kbuf, &ts)) {
        events++;
        unsigned long long v = 0;
        tep_read_number_field(t->common_type, data, &v);
        const char* rec = static_cast<const char*>(data);
        if (static_cast<int>(v) == t->sched_switch->id) {
          unsigned long long a, b, c, d, e;
          tep_read_number_field(t->prev_pid, data, &a);
          tep_read_number_field(t->prev_prio, data, &b);
          tep_read_number_field(t->prev_state, data, &c);
          tep_read_number_field(t->next_pid, data, &d);
          tep_read_number_field(t->next_prio, data, &e);
          sum += ts + a + b + c + d + e + strnlen(rec + t->prev_comm->offset, 16) +
                 strnlen(rec + t->next_comm->offset, 16);
        } else if (static_cast<int>(v) == t->print->id) {
          unsigned long long ip = 0;
          tep_read_number_field(t->ip, data, &ip);
          int size = kbuffer_event_size(kbuf);
          sum += ts + ip + strnlen(rec + t->buf->offset, static_cast<size_t>(size) - t->buf->offset);
        } else {
          sum += ts;
        }
      }
    }
    benchmark::DoNotOptimize(sum);
  }
  kbuffer_free(kbuf);
  Report(state, n, events);
}

void BM_SluiceSchedSwitch(benchmark::State& state) {
  static auto pages = BuildPages(false);
  RunSluice(state, pages, false);
}
void BM_SluiceSchedSwitchCompact(benchmark::State& state) {
  static auto pages = BuildPages(false);
  RunSluice(state, pages, true);
}
void BM_LibtraceeventSchedSwitch(benchmark::State& state) {
  static auto pages = BuildPages(false);
  RunLibtraceevent(state, pages);
}
void BM_SluicePrint(benchmark::State& state) {
  static auto pages = BuildPages(true);
  RunSluice(state, pages, false);
}
void BM_LibtraceeventPrint(benchmark::State& state) {
  static auto pages = BuildPages(true);
  RunLibtraceevent(state, pages);
}
void BM_SluiceCapturedMix(benchmark::State& state) {
  static auto pages = CapturedPages();
  RunSluice(state, pages, false);
}
void BM_SluiceCapturedMixCompact(benchmark::State& state) {
  static auto pages = CapturedPages();
  RunSluice(state, pages, true);
}
void BM_LibtraceeventCapturedMix(benchmark::State& state) {
  static auto pages = CapturedPages();
  RunLibtraceevent(state, pages);
}

BENCHMARK(BM_SluiceSchedSwitch);
BENCHMARK(BM_SluiceSchedSwitchCompact);
BENCHMARK(BM_LibtraceeventSchedSwitch);
BENCHMARK(BM_SluicePrint);
BENCHMARK(BM_LibtraceeventPrint);
BENCHMARK(BM_SluiceCapturedMix);
BENCHMARK(BM_SluiceCapturedMixCompact);
BENCHMARK(BM_LibtraceeventCapturedMix);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
