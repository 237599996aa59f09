#include "user/cmd/multi_trace_query.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "service/trace_file_rotation.h"
#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "shm/base/string_util.h"
#include "shm/base/varint.h"
#include "user/cmd/trace_path.h"
#include "user/query/engine/query_engine.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {
namespace {

constexpr char kPrefix[] = "sluice query: ";

// ---- the memory an import holds --------------------------------------------
//
// Peak RSS of `sluice query TRACE -q "select 1"` less that of a near-empty
// trace (21 MB: the binary, SQLite, the prelude), over the size of TRACE.
// Measured 2026-12-03 on traces `sluice record` wrote (compact sched_switch
// and sched_waking, the bulk of a kernel trace; 0.75 to 1.1 MB, 80-130 k
// events): 21-25x; 17x for the 78.6 MB sched-10m trace of
// docs/PERFORMANCE.md. The same events compressed (`--compress zstd` or
// `deflate`, 1.5-1.9 bytes an event) 96-98x. Eight copies of a 1.1 MB trace
// imported at once took 23 MB more each than one alone. A query adds what its
// own sorts and joins hold (3% for the per-process CPU time). The multiples
// leave about 15% above the most measured.
constexpr uint64_t kImportFixedBytes = 8ull << 20;  // A connection, the prelude's views.
constexpr uint64_t kImportBytesPerFileByte = 28;
constexpr uint64_t kImportBytesPerCompressedByte = 112;
// Enough records to see the mix; the rest of the file is taken to be alike.
constexpr int kRecordsToWalk = 256;

// ---- captured rows ---------------------------------------------------------

void AppendCell(const ResultCell& cell, std::string* out) {
  out->push_back(static_cast<char>(cell.type));
  AppendVarInt(cell.text.size(), out);
  out->append(cell.text);
}

// The cell at *pos of `cells` into `cell`; false at the end.
bool NextCell(std::string_view cells, size_t* pos, ResultCell* cell) {
  if (*pos >= cells.size()) return false;
  cell->type = static_cast<unsigned char>(cells[(*pos)++]);
  uint64_t length = 0;
  ReadVarInt(cells, pos, &length);  // Written by AppendCell: whole.
  cell->text.assign(cells.substr(*pos, length));
  *pos += length;
  return true;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string WithoutPrefix(std::string message) {
  if (message.starts_with(kPrefix)) message.erase(0, sizeof(kPrefix) - 1);
  return message;
}

std::string MiB(uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }

// The room a cgroup's memory limit leaves (limit - usage), the least over
// this process's cgroup and its ancestors; UINT64_MAX when none sets one.
// `root` is where the hierarchy is mounted, `path` the cgroup in it.
uint64_t CgroupRoom(const std::string& root, std::string path, const char* limit_file, const char* usage_file) {
  uint64_t room = UINT64_MAX;
  for (;;) {
    const std::string dir = root + (path == "/" ? "" : path);
    StatusOr<std::string> limit = ReadFile(dir + "/" + limit_file, 64);
    StatusOr<std::string> usage = ReadFile(dir + "/" + usage_file, 64);
    if (limit.ok() && usage.ok()) {
      // "max" (v2) or a page-rounded INT64_MAX (v1): no limit.
      const uint64_t max = strtoull(limit->c_str(), nullptr, 10);
      const uint64_t used = strtoull(usage->c_str(), nullptr, 10);
      if (limit->rfind("max", 0) != 0 && max > 0 && max < (1ull << 60))
        room = std::min(room, max > used ? max - used : 0);
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return room;
}

uint64_t CgroupsRoom() {
  StatusOr<std::string> cgroups = ReadFile("/proc/self/cgroup", 1 << 16);
  if (!cgroups.ok()) return UINT64_MAX;
  uint64_t room = UINT64_MAX;
  ForEachLine(*cgroups, [&room](std::string_view line) {
    // "ID:CONTROLLERS:PATH": v2 is "0::PATH", v1's memory hierarchy names
    // "memory" among its controllers.
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string_view::npos || second == std::string_view::npos) return true;
    const std::string controllers = "," + std::string(line.substr(first + 1, second - first - 1)) + ",";
    const std::string path(line.substr(second + 1));
    if (line.substr(0, first) == "0" && controllers == ",,") {
      room = std::min(room, CgroupRoom("/sys/fs/cgroup", path, "memory.max", "memory.current"));
    } else if (controllers.find(",memory,") != std::string::npos) {
      room = std::min(room, CgroupRoom("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes",
                                       "memory.usage_in_bytes"));
    }
    return true;
  });
  return room;
}

// ---- the runner ------------------------------------------------------------

class Runner {
 public:
  Runner(const MultiTraceQueryOptions& options, FILE* out, FILE* err)
      : options_(options), out_(out), err_(err), slots_(options.traces.size()) {}

  int Run() {
    const auto start = std::chrono::steady_clock::now();
    budget_ = options_.memory_bytes ? options_.memory_bytes : AvailableMemoryBytes();
    for (size_t i = 0; i < slots_.size(); i++) slots_[i].need = EstimateImportBytes(options_.traces[i]);
    size_t jobs = static_cast<size_t>(options_.jobs > 0 ? options_.jobs : UsableCpus());
    // Without SQLite's mutexes, connections on two threads are not safe.
    if (!sqlite3_threadsafe()) jobs = 1;
    // SQLite counts every allocation it makes (sqlite3_memory_used) under one
    // process-wide mutex; on several threads at once they queue on it. No one
    // reads the count. Only before SQLite's first use (not initialised yet in
    // `sluice query`); later it refuses (SQLITE_MISUSE) and counts on.
    if (jobs > 1) sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    jobs = std::clamp<size_t>(jobs, 1, std::max<size_t>(1, slots_.size()));
    std::vector<std::thread> workers;
    for (size_t i = 0; i < jobs; i++) workers.emplace_back([this] { Work(); });
    Print();
    for (std::thread& worker : workers) worker.join();
    if (options_.timing) {
      const double seconds = SecondsSince(start);
      fprintf(err_, "%s%zu traces in %.3f s (%.1f traces/s), up to %zu at once\n", kPrefix, slots_.size(), seconds,
              seconds > 0 ? static_cast<double>(slots_.size()) / seconds : 0.0, jobs);
    }
    return failed_ ? 1 : 0;
  }

 private:
  struct Slot {
    uint64_t need = 0;  // EstimateImportBytes.
    bool done = false;
    TraceAnswer answer;
  };

  static uint64_t HeldBytes(const TraceAnswer& answer) {
    uint64_t bytes = 0;
    for (const CapturedResult& result : answer.results) bytes += result.HeldBytes();
    return bytes;
  }

  // A worker: takes the traces in order, each when it fits.
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (next_ == slots_.size()) return;
      const size_t i = next_;
      // One at least, whatever it needs: else a trace larger than the
      // budget would never run.
      if (running_ > 0 && held_ + slots_[i].need > budget_) {
        if (!said_wait_) {
          said_wait_ = true;
          fprintf(err_,
                  "%swaiting for memory: %s needs about %s to import, and %s of the %s available are "
                  "taken; running fewer traces at once\n",
                  kPrefix, options_.traces[i].c_str(), MiB(slots_[i].need).c_str(), MiB(held_).c_str(),
                  MiB(budget_).c_str());
        }
        changed_.wait(lock);
        continue;
      }
      next_++;
      running_++;
      held_ += slots_[i].need;
      lock.unlock();
      TraceAnswer answer = options_.answer ? options_.answer(i, options_.traces[i])
                                           : AnswerTrace(options_.traces[i], options_.script, options_.all);
      const uint64_t captured = HeldBytes(answer);
      lock.lock();
      slots_[i].answer = std::move(answer);
      slots_[i].done = true;
      running_--;
      held_ = held_ - slots_[i].need + captured;
      changed_.notify_all();
    }
  }

  void Release(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ -= std::min(held_, bytes);
    changed_.notify_all();
  }

  // Why `answer` does not fit the results printed so far; "" if it does.
  std::string Mismatch(const TraceAnswer& answer) const {
    if (answer.results.size() != reference_.size()) {
      return "its script printed " + CountOf(answer.results.size(), "result") + ", the traces before it " +
             std::to_string(reference_.size());
    }
    for (size_t k = 0; k < reference_.size(); k++) {
      if (answer.results[k].columns == reference_[k]) continue;
      std::string message = "its result has the columns (" + Join(answer.results[k].columns, ", ") + "), not (" +
                            Join(reference_[k], ", ") + ") as the traces before it";
      if (reference_.size() > 1)
        message += " (result " + std::to_string(k + 1) + " of " + std::to_string(reference_.size()) + ")";
      return message;
    }
    return "";
  }

  void WriteRows(ResultRowWriter* writer, const std::string& trace, const CapturedResult& result) {
    std::vector<ResultCell> row(result.columns.size() + 1);
    row[0].type = SQLITE_TEXT;
    row[0].text = trace;
    size_t pos = 0;
    for (uint64_t r = 0; r < result.rows; r++) {
      for (size_t c = 1; c < row.size(); c++) NextCell(result.cells, &pos, &row[c]);
      writer->Row(row);
    }
  }

  std::unique_ptr<ResultRowWriter> StartResult(size_t k) {
    std::unique_ptr<ResultRowWriter> writer = MakeResultRowWriter(options_.format, out_);
    std::vector<std::string> header = {"trace"};
    header.insert(header.end(), reference_[k].begin(), reference_[k].end());
    writer->Header(header);
    return writer;
  }

  // The calling thread: the traces in the order named.
  void Print() {
    std::unique_ptr<ResultRowWriter> first;  // Result 0's, as the traces come in.
    bool have_reference = false;
    std::vector<size_t> good;
    for (size_t i = 0; i < slots_.size(); i++) {
      TraceAnswer answer;
      {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [&] { return slots_[i].done; });
        answer = std::move(slots_[i].answer);
      }
      const std::string& trace = options_.traces[i];
      if (answer.status.ok() && have_reference) {
        if (std::string why = Mismatch(answer); !why.empty()) answer.status = Status::Error(why);
      }
      if (options_.timing) {
        fprintf(err_, "%s%s: imported in %.3f s, script %.1f ms (%.3f s CPU)\n", kPrefix, trace.c_str(),
                answer.import_seconds, answer.script_seconds * 1e3, answer.cpu_seconds);
      }
      if (!answer.status.ok()) {
        failed_ = true;
        // Rows handed to stdio before it go out first (on a terminal, where
        // both streams show; the writer may still hold some).
        fflush(out_);
        // "TRACE: why", once: the reader's messages may name the file already.
        std::string why = WithoutPrefix(answer.status.message());
        if (!why.starts_with(trace + ": ")) why = trace + ": " + why;
        fprintf(err_, "%s%s\n", kPrefix, why.c_str());
        Release(HeldBytes(answer));
        continue;
      }
      if (!have_reference) {
        have_reference = true;
        for (const CapturedResult& result : answer.results) reference_.push_back(result.columns);
        if (!reference_.empty()) first = StartResult(0);
      }
      good.push_back(i);
      if (!answer.results.empty()) {
        WriteRows(first.get(), trace, answer.results[0]);
        Release(answer.results[0].HeldBytes());
        answer.results[0] = CapturedResult();
      }
      slots_[i].answer = std::move(answer);  // The later results, for --all.
    }
    if (first) first->End();
    first.reset();
    for (size_t k = 1; k < reference_.size(); k++) {
      fputs(ResultSeparator(options_.format), out_);
      std::unique_ptr<ResultRowWriter> writer = StartResult(k);
      for (size_t i : good) {
        WriteRows(writer.get(), options_.traces[i], slots_[i].answer.results[k]);
        slots_[i].answer.results[k] = CapturedResult();
      }
      writer->End();
    }
  }

  const MultiTraceQueryOptions& options_;
  FILE* const out_;
  FILE* const err_;
  uint64_t budget_ = 0;
  bool failed_ = false;                            // The printer's.
  std::vector<std::vector<std::string>> reference_;  // The first good trace's columns; the printer's.

  std::mutex mu_;
  std::condition_variable changed_;  // A slot done, or memory released.
  // Guarded by mu_, except slots_[i].answer once slots_[i].done (the
  // printer's then) and each slot's need (written before the workers start).
  std::vector<Slot> slots_;
  size_t next_ = 0;       // The next trace to start.
  size_t running_ = 0;    // Workers importing or querying.
  uint64_t held_ = 0;     // Running imports' estimates plus captured rows not yet printed.
  bool said_wait_ = false;
};

}  // namespace

bool NamesManyTraces(const std::vector<std::string>& operands) {
  return operands.size() > 1 || (operands.size() == 1 && IsDirectory(operands[0]));
}

StatusOr<std::vector<std::string>> ExpandTraceOperands(const std::vector<std::string>& operands,
                                                       std::vector<std::string>* notes) {
  std::vector<std::string> traces;
  for (const std::string& operand : operands) {
    if (!IsDirectory(operand)) {
      traces.push_back(operand);
      continue;
    }
    DIR* dir = opendir(operand.c_str());
    if (!dir) return Status::Error(WithErrno("cannot read the directory " + operand, errno));
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
    }
    const int read_errno = errno;
    closedir(dir);
    if (read_errno != 0) return Status::Error(WithErrno("cannot read the directory " + operand, read_errno));
    std::sort(names.begin(), names.end());
    const std::string prefix = operand.ends_with('/') ? operand : operand + "/";
    std::vector<std::string> skipped;
    size_t found = 0;
    for (const std::string& name : names) {
      const std::string path = prefix + name;
      struct stat st {};
      if (stat(path.c_str(), &st) != 0) {
        skipped.push_back(name + " (" + ErrnoMessage(errno) + ")");  // A dangling symlink.
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        skipped.push_back(name + "/ (a directory)");
        continue;
      }
      if (!S_ISREG(st.st_mode)) {
        skipped.push_back(name + " (not a regular file)");
        continue;
      }
      if (st.st_size == 0) {
        skipped.push_back(name + " (empty)");
        continue;
      }
      // sluice record's files while they are written: a rotating
      // recording's NAME.000007.pftrace.recording, a single one's
      // NAME.recording-XXXXXX. Whole traces only once renamed.
      if (name.ends_with(kRotatingFileSuffix) || name.find(".recording-") != std::string::npos) {
        skipped.push_back(name + " (still being recorded)");
        continue;
      }
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        unsigned char first = 0;
        const ssize_t n = pread(fd, &first, 1, 0);
        close(fd);
        if (n == 1 && first != kTracePacketTag) {
          skipped.push_back(name + " (not a Perfetto trace)");
          continue;
        }
      }
      // Unreadable: kept, so that it fails by name.
      traces.push_back(path);
      found++;
    }
    std::string list;
    for (size_t i = 0; i < skipped.size() && i < 5; i++) list += (i ? ", " : "") + skipped[i];
    if (skipped.size() > 5) list += " and " + std::to_string(skipped.size() - 5) + " more";
    if (found == 0) {
      return Status::Error(operand + " holds no trace file" + (skipped.empty() ? "" : " (" + list + ")") +
                           ": name a directory of Perfetto traces, or trace files");
    }
    if (!skipped.empty()) {
      notes->push_back(operand + ": skipped " + std::to_string(skipped.size()) +
                       (skipped.size() == 1 ? " entry that is not a trace file: " : " entries that are not trace files: ") +
                       list);
    }
  }
  return traces;
}

uint64_t EstimateImportBytes(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return kImportFixedBytes;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t plain = 0, compressed = 0, offset = 0;
  if (const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    // Each record's tag, length and its packet's first two bytes: 0x92 0x03
    // opens compressed_packets (field 50, zlib), 0xaa 0x08
    // zstd_compressed_packets (field 133), as the reader tells them.
    for (int records = 0; records < kRecordsToWalk && offset < size; records++) {
      uint8_t head[1 + kMaxVarIntSize + 2];
      const ssize_t n = pread(fd, head, sizeof(head), static_cast<off_t>(offset));
      if (n < 2 || head[0] != kTracePacketTag) break;
      const uint8_t* p = head + 1;
      uint64_t length = 0;
      if (!ReadVarInt(&p, head + n, &length)) break;
      const uint64_t header = static_cast<uint64_t>(p - head);
      const bool is_compressed =
          p + 2 <= head + n && ((p[0] == 0x92 && p[1] == 0x03) || (p[0] == 0xaa && p[1] == 0x08));
      const uint64_t record = std::min(header + length, size - offset);
      (is_compressed ? compressed : plain) += record;
      offset += record;
    }
    close(fd);
  }
  // The rest, mixed as what was walked.
  const uint64_t rest = size - std::min(offset, size);
  if (offset > 0 && compressed > 0) {
    const uint64_t rest_compressed =
        static_cast<uint64_t>(static_cast<double>(rest) * static_cast<double>(compressed) / static_cast<double>(offset));
    compressed += rest_compressed;
    plain += rest - rest_compressed;
  } else {
    plain += rest;
  }
  return kImportFixedBytes + plain * kImportBytesPerFileByte + compressed * kImportBytesPerCompressedByte;
}

uint64_t ParseMemAvailable(std::string_view meminfo) {
  const size_t at = meminfo.find("MemAvailable:");
  if (at == std::string_view::npos) return 0;
  const std::string line(meminfo.substr(at + 13, meminfo.find('\n', at) - at - 13));
  return strtoull(line.c_str(), nullptr, 10) * 1024;  // In kB.
}

uint64_t AvailableMemoryBytes() {
  StatusOr<std::string> meminfo = ReadFile("/proc/meminfo", 1 << 20);
  uint64_t available = meminfo.ok() ? ParseMemAvailable(*meminfo) : 0;
  if (available == 0) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page_size > 0) available = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }
  return std::min(available, CgroupsRoom());
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

uint64_t CapturedResult::HeldBytes() const {
  uint64_t bytes = sizeof(*this) + cells.capacity();
  for (const std::string& column : columns) bytes += sizeof(column) + column.capacity();
  return bytes;
}

TraceAnswer AnswerTrace(const std::string& path, const std::string& script, bool all) {
  TraceAnswer answer;
  const double cpu_start = ThreadCpuSeconds();
  const auto import_start = std::chrono::steady_clock::now();
  if (Status readable = CheckTraceReadable(path); !readable.ok()) {
    answer.status = readable;
    return answer;
  }
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(path);
  answer.import_seconds = SecondsSince(import_start);
  if (!engine.ok()) {
    answer.status = engine.status();
    answer.cpu_seconds = ThreadCpuSeconds() - cpu_start;
    return answer;
  }
  const auto script_start = std::chrono::steady_clock::now();
  // What a one-trace run prints (query_command.cc's RunScript): the last
  // statement's result, or every one's with --all; statements without
  // result columns print nothing.
  Status ran = RunSqlScript((*engine)->db(), script, [&](const SqlStatement& statement) {
    const int columns = sqlite3_column_count(statement.stmt);
    if ((!all && !statement.last) || columns == 0) return StepToEnd(statement.stmt);
    CapturedResult& result = answer.results.emplace_back();
    for (int c = 0; c < columns; c++) {
      const char* name = sqlite3_column_name(statement.stmt, c);
      result.columns.push_back(name ? name : "");
    }
    ResultCell cell;
    for (;;) {
      const int rc = sqlite3_step(statement.stmt);
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return Status::Error(sqlite3_errmsg(sqlite3_db_handle(statement.stmt)));
      for (int c = 0; c < columns; c++) {
        ReadResultCell(statement.stmt, c, &cell);
        AppendCell(cell, &result.cells);
      }
      result.rows++;
    }
  }, 1, (*engine)->dialect());
  answer.script_seconds = SecondsSince(script_start);
  engine->reset();  // The trace's tables go before the next trace comes.
  answer.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  if (!ran.ok()) {
    answer.status = ran;
    answer.results.clear();  // A failed trace adds no rows.
  }
  for (CapturedResult& result : answer.results) result.cells.shrink_to_fit();
  return answer;
}

int RunMultiTraceQuery(const MultiTraceQueryOptions& options, FILE* out, FILE* err) {
  return Runner(options, out, err).Run();
}

}  // namespace sluice
