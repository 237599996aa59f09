#include "tests/user/cmd/record_test_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include <vector>

#include <gtest/gtest.h>

#include "tests/kernel_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "user/trace/trace_file_reader.h"

namespace sluice::testing {

std::string WhyRecordTestsCannotRun(const std::string& bin_dir) {
  if (geteuid() != 0) return "needs root to control tracefs";
  if (access((std::string(Tracefs::kDefaultRoot) + "/trace_marker").c_str(), W_OK) != 0)
    return "no tracefs at /sys/kernel/tracing";
  for (const char* name : {"sluice", "sluiced", "sluice-probes"}) {
    if (access((bin_dir + "/" + name).c_str(), X_OK) != 0)
      return bin_dir + "/" + name + " not found: build it (make) or set SLUICE_BIN_DIR";
  }
  return "";
}

std::string MakeTempDir(const std::string& prefix) {
  std::string path = "/tmp/" + prefix + "XXXXXX";
  std::vector<char> tmpl(path.begin(), path.end());
  tmpl.push_back('\0');
  return mkdtemp(tmpl.data()) ? std::string(tmpl.data()) : "";
}

void RemoveTempDir(const std::string& dir) {
  // Whole trees: tests make subfolders (traces/sub, empty/) and sockets.
  std::error_code ignored;
  if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
}

std::string FileBeingRecorded(const std::string& trace_path) {
  if (access(trace_path.c_str(), F_OK) == 0) return trace_path;
  const std::filesystem::path path(trace_path);
  const std::string prefix = path.filename().string() + ".recording-";
  std::string newest = trace_path;
  std::filesystem::file_time_type newest_time;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path(), error)) {
    if (!entry.path().filename().string().starts_with(prefix)) continue;
    const auto time = entry.last_write_time(error);
    if (error) continue;
    if (newest == trace_path || time > newest_time) {
      newest = entry.path().string();
      newest_time = time;
    }
  }
  return newest;
}

bool TraceFileHolds(const std::string& path, std::string_view text) {
  const std::string bytes = ReadFileOr(path, "");
  if (bytes.find(text) != std::string::npos) return true;
  bool held = false;  // A compressed file (--compress): look inside its containers.
  TraceFileSummary summary;
  (void)ReadTraceBytes(
      bytes, [&](std::string_view packet) { held = held || packet.find(text) != std::string_view::npos; }, &summary);
  return held;
}

bool WriteMarkerUntilInFile(const std::string& marker, const std::string& trace_path,
                            uint64_t timeout_ms, ChildProcess* recorder) {
  int fd = open((std::string(Tracefs::kDefaultRoot) + "/trace_marker").c_str(),
                O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const uint64_t deadline = NowMs() + timeout_ms;
  bool seen = false;
  while (!seen && NowMs() < deadline && recorder->running()) {
    (void)!write(fd, marker.data(), marker.size());
    usleep(100 * 1000);
    seen = TraceFileHolds(FileBeingRecorded(trace_path), marker);
  }
  close(fd);
  return seen;
}

bool SluicedAndProbes::Start(const std::string& bin_dir, const std::string& dir) {
  dir_ = dir;
  if (!sluiced.Start({bin_dir + "/sluiced", "--foreground", "--producer-socket",
                      producer_socket(), "--consumer-socket", consumer_socket()},
                     dir + "/sluiced.out", dir + "/sluiced.err")) {
    ADD_FAILURE() << "cannot start " << bin_dir << "/sluiced";
    return false;
  }
  // sluice-probes retries until sluiced listens.
  if (!probes.Start({bin_dir + "/sluice-probes", "--producer-socket", producer_socket()},
                    dir + "/probes.out", dir + "/probes.err")) {
    ADD_FAILURE() << "cannot start " << bin_dir << "/sluice-probes";
    return false;
  }
  const uint64_t deadline = NowMs() + ScaledTimeoutMs(60000);
  auto connected = [&] {
    std::string log = sluiced.Stderr();
    size_t p = log.find("producer ");
    return p != std::string::npos && log.find("connected", p) != std::string::npos;
  };
  while (!connected() && NowMs() < deadline && sluiced.running() && probes.running())
    usleep(20 * 1000);
  if (connected()) return true;
  ADD_FAILURE() << "sluice-probes did not connect:\n" << sluiced.Describe() << "\n"
                << probes.Describe();
  return false;
}

}  // namespace sluice::testing
