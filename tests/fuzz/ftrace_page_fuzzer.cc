// libFuzzer target: the ftrace page parser and encoder on arbitrary bytes,
// with the format tables of each tree in ../shared/kernel-formats/ and the
// host tree (loaded once). The first input byte selects the tree, the
// sub-buffer size and compact_sched; the rest is the pages. Every bundle
// written must parse as a TracePacket.
//
//   make fuzz    (or: build/fuzz/ftrace_page_fuzzer -max_total_time=60)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/trace_writer.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_page_encoder.h"

namespace {

struct Tree {
  explicit Tree(sluice::FtraceFormatTable t) : table(std::move(t)), translator(&table) {}
  sluice::FtraceFormatTable table;
  sluice::FtraceEventTranslator translator;  // Built once per tree.
};

std::vector<std::unique_ptr<Tree>>* LoadTrees() {
  // Kernel strings need not be UTF-8; libprotobuf logs each such string
  // field when parsing (and still parses it).
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int,
                                     const std::string&) {});
  auto* trees = new std::vector<std::unique_ptr<Tree>>();
  for (const char* dir : {"../shared/kernel-formats/android_hammerhead_MRA59G_3.4.0/events",
                          "../shared/kernel-formats/android_flounder_lte_LRX16F_3.10.40/events",
                          "../shared/kernel-formats/android_walleye_OPM5.171019.017.A1_4.4.88/events",
                          "tests/data/kernel-formats/host-6.18/events"}) {
    auto t = sluice::FtraceFormatTable::LoadAll(dir, nullptr);
    if (!t.ok()) {
      fprintf(stderr, "ftrace_page_fuzzer: %s (run from the project root)\n",
              t.status().message().c_str());
      abort();
    }
    trees->push_back(std::make_unique<Tree>(std::move(*t)));
  }
  return trees;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::vector<std::unique_ptr<Tree>>* trees = LoadTrees();
  if (size < 1) return 0;
  const uint8_t selector = data[0];
  const Tree& tree = *(*trees)[selector % trees->size()];
  const bool compact = (selector >> 2) & 1;
  // Small pages reach the page end often; the tree's own page size is the
  // real case.
  const size_t page_size = (selector >> 3) & 1 ? 256 : tree.table.header().page_size();
  data++;
  size--;
  // Copy into an exactly sized buffer so that ASan sees every overread.
  const size_t pages = size / page_size + (size % page_size ? 1 : 0);
  std::unique_ptr<uint8_t[]> buf(new uint8_t[pages * page_size]);
  memset(buf.get(), 0, pages * page_size);
  if (size) memcpy(buf.get(), data, size);

  sluice::FtraceEncodeOptions options;
  options.compact_sched = compact;
  options.ftrace_clock = (selector >> 4) & 1 ? 2 : 0;
  sluice::FtracePageEncoder encoder(&tree.translator, 1, options);
  sluice::HeapTraceWriter writer;
  encoder.EncodePages(buf.get(), pages, page_size, &writer);
  for (const std::string& p : writer.packets()) {
    perfetto::protos::TracePacket packet;
    if (!packet.ParseFromString(p)) abort();
  }
  return 0;
}
