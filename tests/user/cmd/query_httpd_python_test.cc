// Perfetto's Python API, unchanged, against `sluice query --httpd` and
// sluice-trace-processor: query_httpd_python_check.py says what it checks.
// The same script runs against upstream's trace_processor_shell where
// ../shared/tools/perfetto has it, so the checks test the protocol, not
// sluice's reading of it.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

constexpr char kClientDir[] = "../shared/tools/perfetto/python";
constexpr char kUpstreamShell[] = "../shared/tools/perfetto/trace_processor_shell";

// Runs the check script with Debian's python3 (which has python3-protobuf
// and python3-pandas, make's dependencies) and the client on its path.
testing::CommandResult RunCheck(const std::vector<std::string>& args) {
  std::string dir = testing::MakeTempDir("sluice_httpd_python_test_");
  std::vector<std::string> argv = {"/usr/bin/env", std::string("PYTHONPATH=") + kClientDir, "/usr/bin/python3",
                                   "tests/user/cmd/query_httpd_python_check.py"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::CommandResult result = testing::RunToCompletion(argv, dir);
  testing::RemoveTempDir(dir);
  return result;
}

bool ClientPresent() { return access((std::string(kClientDir) + "/perfetto/trace_processor/api.py").c_str(), R_OK) == 0; }

TEST(QueryHttpdPythonTest, PerfettosClientGetsSluicesAnswers) {
  if (!ClientPresent()) GTEST_SKIP() << "Perfetto's Python client is not at " << kClientDir;
  testing::CommandResult r = RunCheck({"--server", "sluice", "--bin-dir", testing::SluiceBinDir()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(QueryHttpdPythonTest, TheSameChecksPassOnUpstreamsServer) {
  if (!ClientPresent() || access(kUpstreamShell, X_OK) != 0)
    GTEST_SKIP() << "upstream's trace_processor_shell is not at " << kUpstreamShell;
  testing::CommandResult r = RunCheck({"--server", "upstream", "--tp", kUpstreamShell});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace sluice
