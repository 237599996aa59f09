// Helpers for the kernel tests that run `sluice record` as a subprocess
// (record_command_kernel_test.cc, record_command_fault_kernel_test.cc): the
// "is it recording yet" wait on a marker in the streamed file, and sluiced +
// sluice-probes started as a user starts them for `sluice record --daemon`.
#ifndef SLUICE_TESTS_USER_CMD_RECORD_TEST_UTIL_H_
#define SLUICE_TESTS_USER_CMD_RECORD_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "tests/child_process_test_util.h"

namespace sluice::testing {

// Why `sluice record` cannot run its kernel tests here ("" if it can): not
// root, no writable tracefs, or a binary missing from `bin_dir`.
std::string WhyRecordTestsCannotRun(const std::string& bin_dir);

// A new directory /tmp/<prefix>XXXXXX ("" on failure), and its removal
// with everything in it.
std::string MakeTempDir(const std::string& prefix);
void RemoveTempDir(const std::string& dir);

// The file `sluice record -o trace_path` is writing now: trace_path once
// the recording ended (renamed into place), before that the newest
// trace_path.recording-XXXXXX (user/cmd/record_output.h); trace_path if
// neither exists.
std::string FileBeingRecorded(const std::string& trace_path);

// Whether the trace file at `path` holds `text` in a packet, inside its
// compressed containers too.
bool TraceFileHolds(const std::string& path, std::string_view text);

// Writes `marker` to tracefs' trace_marker every 100 ms until it shows up in
// the file being recorded for `trace_path` (the recorder streams it, so the
// whole data path is live then; a compressed file is looked into),
// `recorder` exits, or timeout_ms passes.
// True once seen.
bool WriteMarkerUntilInFile(const std::string& marker, const std::string& trace_path,
                            uint64_t timeout_ms, ChildProcess* recorder);

// sluiced (--foreground, logging to `dir`/sluiced.err) and sluice-probes on
// sockets in `dir`.
struct SluicedAndProbes {
  // Starts both and waits (up to 60 s, scaled: ScaledTimeoutMs) until
  // sluiced logs the probes' connection. False, with a gtest failure that shows both outputs, if not.
  bool Start(const std::string& bin_dir, const std::string& dir);
  std::string consumer_socket() const { return dir_ + "/consumer.sock"; }
  std::string producer_socket() const { return dir_ + "/producer.sock"; }

  ChildProcess sluiced, probes;

 private:
  std::string dir_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_CMD_RECORD_TEST_UTIL_H_
