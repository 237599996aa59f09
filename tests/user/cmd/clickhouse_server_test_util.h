// A ClickHouse server for tests: Debian's clickhouse-server (18.16 in
// Debian 12; a newer package's `clickhouse server` too) started on
// 127.0.0.1 with a free HTTP port and no other port, its data, logs and
// temporary files under a directory of its own, and a config the helper
// writes. Start() returns once GET /ping answers "Ok."; Stop() sends
// SIGTERM, waits for the exit and removes the directory.
#ifndef SLUICE_TESTS_USER_CMD_CLICKHOUSE_SERVER_TEST_UTIL_H_
#define SLUICE_TESTS_USER_CMD_CLICKHOUSE_SERVER_TEST_UTIL_H_

#include <string>
#include <vector>

#include "tests/child_process_test_util.h"

namespace sluice::testing {

// The command that runs a ClickHouse server ({"/usr/sbin/clickhouse-server"}
// or {"/usr/bin/clickhouse", "server"}); empty if none is installed.
std::vector<std::string> ClickHouseServerCommand();

class ClickHouseTestServer {
 public:
  ClickHouseTestServer() = default;
  ~ClickHouseTestServer() { Stop(); }
  ClickHouseTestServer(const ClickHouseTestServer&) = delete;
  ClickHouseTestServer& operator=(const ClickHouseTestServer&) = delete;

  // Starts the server; "" when it answers, else what went wrong.
  std::string Start();
  void Stop();

  int port() const { return port_; }
  // http://127.0.0.1:PORT/?database=DB
  std::string Url(const std::string& database) const;
  ChildProcess& process() { return process_; }

 private:
  std::string dir_;
  int port_ = 0;
  ChildProcess process_;
};

// A TCP port on 127.0.0.1 that nothing listened on a moment ago.
int FreeLoopbackPort();

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_CMD_CLICKHOUSE_SERVER_TEST_UTIL_H_
