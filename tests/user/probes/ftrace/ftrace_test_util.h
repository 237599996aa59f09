// Test helpers for the ftrace parsers: synthetic ring-buffer pages and
// records built from format files, and loading of captured pages stored as
// xxd hex text (tests/data/ftrace/*.hex).
#ifndef SLUICE_TESTS_USER_PROBES_FTRACE_FTRACE_TEST_UTIL_H_
#define SLUICE_TESTS_USER_PROBES_FTRACE_FTRACE_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/trace_writer.h"
#include "user/probes/ftrace/ftrace_format.h"

namespace sluice::testing {

// Format trees (relative to the project root, where tests run).
inline constexpr const char* kTree34 = "../shared/kernel-formats/android_hammerhead_MRA59G_3.4.0/events";
inline constexpr const char* kTree310 =
    "../shared/kernel-formats/android_flounder_lte_LRX16F_3.10.40/events";
inline constexpr const char* kTree44 =
    "../shared/kernel-formats/android_walleye_OPM5.171019.017.A1_4.4.88/events";
inline constexpr const char* kTreeHost = "tests/data/kernel-formats/host-6.18/events";

// Loads a whole format tree into *out. Callers ASSERT_TRUE the result, so
// that a missing tree (../shared not beside the clone) fails the test with
// the path in the message instead of crashing it on a null lookup later.
inline ::testing::AssertionResult LoadTree(const char* dir, FtraceFormatTable* out) {
  auto t = FtraceFormatTable::LoadAll(dir, nullptr);
  if (!t.ok())
    return ::testing::AssertionFailure() << dir << ": " << t.status().message()
                                         << " (tests run from the project root, ../shared beside it)";
  *out = std::move(*t);
  return ::testing::AssertionSuccess();
}

// A scratch folder under the test's temp dir, emptied when made and removed
// when the test leaves it, failed or not (a copy of a missing tree throws).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) : path_(::testing::TempDir() + "/" + name) {
    std::filesystem::remove_all(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Builds one record of `format`: fixed fields set by name, __data_loc /
// __rel_loc strings appended after the fixed part.
class RecordBuilder {
 public:
  explicit RecordBuilder(const FtraceEventFormat& format) : format_(format) {
    bytes_.assign(format.min_size, 0);
    Int("common_type", format.id);
  }
  RecordBuilder& Int(const std::string& name, int64_t value) {
    const FtraceFieldFormat* f = Field(name);
    if (f) memcpy(bytes_.data() + f->offset, &value, std::min<uint32_t>(f->size, 8));
    return *this;
  }
  RecordBuilder& Str(const std::string& name, const std::string& value) {
    const FtraceFieldFormat* f = Field(name);
    if (!f) return *this;
    switch (f->kind) {
      case FtraceFieldKind::kFixedString:
        memset(bytes_.data() + f->offset, 0, f->size);
        memcpy(bytes_.data() + f->offset, value.data(), std::min<size_t>(value.size(), f->size));
        break;
      case FtraceFieldKind::kTrailingString:
        bytes_.resize(f->offset);
        bytes_.insert(bytes_.end(), value.begin(), value.end());
        bytes_.push_back(0);
        break;
      case FtraceFieldKind::kDataLocString:
      case FtraceFieldKind::kRelLocString: {
        uint32_t start = static_cast<uint32_t>(bytes_.size());
        bytes_.insert(bytes_.end(), value.begin(), value.end());
        bytes_.push_back(0);
        uint32_t off = f->kind == FtraceFieldKind::kRelLocString ? start - (f->offset + 4) : start;
        uint32_t loc = off | (static_cast<uint32_t>(value.size() + 1) << 16);
        memcpy(bytes_.data() + f->offset, &loc, 4);
        break;
      }
      default:
        ADD_FAILURE() << name << " is not a string field";
    }
    return *this;
  }
  std::vector<uint8_t> Build() const {
    std::vector<uint8_t> out = bytes_;
    while (out.size() % 4) out.push_back(0);
    return out;
  }

 private:
  const FtraceFieldFormat* Field(const std::string& name) {
    const FtraceFieldFormat* f = format_.FindField(name);
    EXPECT_NE(f, nullptr) << format_.name << " has no field " << name;
    return f;
  }
  const FtraceEventFormat& format_;
  std::vector<uint8_t> bytes_;
};

// Builds a ring-buffer page the way the kernel lays it out.
class PageBuilder {
 public:
  PageBuilder(const FtraceHeaderFormat& h, uint64_t timestamp) : h_(h) {
    page_.assign(h.page_size(), 0);
    memcpy(page_.data() + h.timestamp_offset, &timestamp, 8);
  }
  // A data record; type_len 0 (length word) if `long_form` or > 112 bytes.
  PageBuilder& Data(uint32_t delta, const std::vector<uint8_t>& payload, bool long_form = false) {
    uint32_t len = static_cast<uint32_t>((payload.size() + 3) / 4 * 4);
    if (long_form || len > 28 * 4) {
      Word(delta << 5);
      Word(len + 4);
    } else {
      Word((delta << 5) | (len / 4));
    }
    Bytes(payload);
    for (size_t i = payload.size(); i < len; i++) Bytes({0});
    return *this;
  }
  PageBuilder& TimeExtend(uint64_t delta) {
    Word(static_cast<uint32_t>(((delta & ((1u << 27) - 1)) << 5) | 30));
    Word(static_cast<uint32_t>(delta >> 27));
    return *this;
  }
  PageBuilder& AbsoluteTs(uint64_t ts59) {
    Word(static_cast<uint32_t>(((ts59 & ((1u << 27) - 1)) << 5) | 31));
    Word(static_cast<uint32_t>(ts59 >> 27));
    return *this;
  }
  // A discarded event: padding whose array[0] counts the bytes after the
  // header word (array[0] included): 4 + array0 bytes in all.
  PageBuilder& Discarded(uint32_t delta, uint32_t array0) {
    Word((delta << 5) | 29);
    Word(array0);
    for (uint32_t i = 4; i < array0; i++) Bytes({0xAA});
    return *this;
  }
  // Null padding: the rest of the page (not counted in commit by default).
  PageBuilder& NullPadding(bool count_in_commit) {
    size_t at = pos_;
    Word(29);
    if (!count_in_commit) pos_ = at;
    return *this;
  }
  PageBuilder& Missed(std::optional<uint64_t> count) {
    missed_ = true;
    missed_count_ = count;
    return *this;
  }
  PageBuilder& RawBytes(const std::vector<uint8_t>& b) {
    Bytes(b);
    return *this;
  }
  PageBuilder& CommitOverride(uint64_t commit) {
    commit_override_ = commit;
    return *this;
  }
  size_t used() const { return pos_; }
  std::vector<uint8_t> Build() {
    uint64_t commit = pos_;
    if (missed_) {
      if (missed_count_) {
        uint64_t c = *missed_count_;
        memcpy(page_.data() + h_.data_offset + pos_, &c, h_.commit_size);
        commit |= 1ull << 30;
      }
      // Like the kernel: the int (1 << 31) sign-extends into a 64-bit long.
      commit |= h_.commit_size == 8 ? 0xffffffff80000000ull : 0x80000000ull;
    }
    if (commit_override_) commit = *commit_override_;
    if (h_.commit_size == 8) {
      memcpy(page_.data() + h_.commit_offset, &commit, 8);
    } else {
      uint32_t c = static_cast<uint32_t>(commit);
      memcpy(page_.data() + h_.commit_offset, &c, 4);
    }
    return page_;
  }

 private:
  void Word(uint32_t w) {
    uint8_t b[4];
    memcpy(b, &w, 4);
    Bytes({b[0], b[1], b[2], b[3]});
  }
  void Bytes(const std::vector<uint8_t>& b) {
    for (uint8_t c : b) {
      if (h_.data_offset + pos_ < page_.size()) page_[h_.data_offset + pos_] = c;
      pos_++;
    }
  }
  FtraceHeaderFormat h_;
  std::vector<uint8_t> page_;
  size_t pos_ = 0;
  bool missed_ = false;
  std::optional<uint64_t> missed_count_;
  std::optional<uint64_t> commit_override_;
};

// A captured page file: xxd hex lines, '#' comments (the kernel's text
// rendering of the same events, prefixed "#   ").
struct CapturedPages {
  std::vector<uint8_t> bytes;      // All pages, contiguous.
  std::vector<std::string> text;   // The kernel's text lines for this CPU.
  size_t page_count(size_t page_size = 4096) const { return bytes.size() / page_size; }
};

inline CapturedPages LoadCapturedPages(const std::string& path) {
  CapturedPages out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("#   ", 0) == 0) out.text.push_back(line.substr(4));
      continue;
    }
    // "00000000: 0011 2233 ...  ascii"
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string hex = line.substr(colon + 1, 40);
    std::string digits;
    for (char c : hex)
      if (isxdigit(static_cast<unsigned char>(c))) digits.push_back(c);
    for (size_t i = 0; i + 1 < digits.size(); i += 2)
      out.bytes.push_back(static_cast<uint8_t>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// One line of the kernel's text rendering.
struct TextEvent {
  std::string comm;  // task that logged it
  int pid = 0;
  int cpu = 0;
  uint64_t ts_us = 0;  // microseconds
  std::string name;    // "sched_switch", "tracing_mark_write"...
  std::string args;    // after "name: "
  std::map<std::string, std::string> kv;  // key=value pairs of args
};

// "<comm>-<pid> [<cpu>] <flags> <sec>.<usec>: <name>: <args>". No std::regex:
// g++ 12 warns inside it at -O1 with sanitizers (-Werror).
inline std::optional<TextEvent> ParseTextLine(const std::string& line) {
  auto all_digits = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  // The CPU field: the first " [digits] ".
  size_t open = 0;
  for (;;) {
    open = line.find(" [", open);
    if (open == std::string::npos) return std::nullopt;
    size_t close = line.find("] ", open);
    if (close != std::string::npos && all_digits(line.substr(open + 2, close - open - 2))) break;
    open++;
  }
  size_t close = line.find("] ", open);
  TextEvent e;
  std::string who = line.substr(0, open);
  who.erase(0, who.find_first_not_of(' '));
  while (!who.empty() && who.back() == ' ') who.pop_back();
  size_t dash = who.rfind('-');
  if (dash == std::string::npos || !all_digits(who.substr(dash + 1))) return std::nullopt;
  e.comm = who.substr(0, dash);
  e.pid = std::stoi(who.substr(dash + 1));
  e.cpu = std::stoi(line.substr(open + 2, close - open - 2));
  std::istringstream rest(line.substr(close + 2));
  std::string flags, ts;
  if (!(rest >> flags >> ts) || ts.size() < 9 || ts.back() != ':') return std::nullopt;
  ts.pop_back();
  size_t dot = ts.find('.');
  if (dot == std::string::npos || ts.size() - dot - 1 != 6) return std::nullopt;
  e.ts_us = std::stoull(ts.substr(0, dot)) * 1000000 + std::stoull(ts.substr(dot + 1));
  std::string tail;
  std::getline(rest, tail);
  tail.erase(0, tail.find_first_not_of(' '));
  size_t colon = tail.find(':');
  if (colon == std::string::npos) return std::nullopt;
  e.name = tail.substr(0, colon);
  e.args = colon + 2 <= tail.size() ? tail.substr(colon + 2) : "";
  std::istringstream ss(e.args);
  std::string tok;
  while (ss >> tok) {
    size_t eq = tok.find('=');
    if (eq != std::string::npos) e.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return e;
}

// Hands a data source HeapTraceWriters and keeps pointers to them, to read
// what was written after Stop() (the data source owns the writers: read
// before destroying it).
class WriterCollector {
 public:
  std::function<std::unique_ptr<TraceWriter>()> Factory() {
    return [this] {
      std::lock_guard<std::mutex> lock(mutex_);
      auto w = std::make_unique<HeapTraceWriter>(static_cast<uint16_t>(writers_.size() + 1));
      writers_.push_back(w.get());
      return w;
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return writers_.size();
  }
  // Every writer's packets, parsed, in writer order.
  std::vector<perfetto::protos::TracePacket> Packets() {
    std::vector<perfetto::protos::TracePacket> out;
    for (auto& packets : PacketsByWriter())
      for (auto& p : packets) out.push_back(std::move(p));
    return out;
  }
  std::vector<std::vector<perfetto::protos::TracePacket>> PacketsByWriter() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::vector<perfetto::protos::TracePacket>> out;
    for (HeapTraceWriter* w : writers_) {
      out.emplace_back();
      for (const std::string& bytes : w->packets()) {
        perfetto::protos::TracePacket p;
        EXPECT_TRUE(p.ParseFromString(bytes));
        out.back().push_back(std::move(p));
      }
    }
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<HeapTraceWriter*> writers_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_PROBES_FTRACE_FTRACE_TEST_UTIL_H_
