#include "tests/user/cmd/clickhouse_server_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/user/cmd/record_test_util.h"
#include "user/cmd/libcurl.h"

namespace sluice::testing {
namespace {

// Only a broken server takes this long to answer /ping or to stop.
constexpr uint64_t kWaitMs = 120 * 1000;

size_t AppendTo(char* data, size_t size, size_t nmemb, void* out) {
  static_cast<std::string*>(out)->append(data, size * nmemb);
  return size * nmemb;
}

// GET /ping's answer, "" if none.
std::string Ping(int port) {
  std::string answer;
  StatusOr<const LibCurl*> loaded = LoadLibCurl();
  if (!loaded.ok()) return answer;
  const LibCurl& api = *loaded.value();
  CURL* curl = api.easy_init();
  if (curl == nullptr) return answer;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/ping";
  api.easy_setopt(curl, CURLOPT_URL, url.c_str());
  api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(curl, CURLOPT_TIMEOUT, 5L);
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendTo);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
  if (api.easy_perform(curl) != CURLE_OK) answer.clear();
  api.easy_cleanup(curl);
  return answer;
}

// The smallest config 18.16 runs with: the HTTP port only (a port left out
// is not opened), loopback only, every path in `dir`, logs in files, and
// one user, `default`, without a password, from loopback.
void WriteConfig(const std::string& dir, int port) {
  std::ofstream(dir + "/config.xml") << "<?xml version=\"1.0\"?>\n<yandex>\n"
                                     << "  <logger><level>warning</level><log>" << dir
                                     << "/log/server.log</log><errorlog>" << dir
                                     << "/log/error.log</errorlog><console>0</console></logger>\n"
                                     << "  <listen_host>127.0.0.1</listen_host>\n"
                                     << "  <http_port>" << port << "</http_port>\n"
                                     << "  <path>" << dir << "/data/</path>\n"
                                     << "  <tmp_path>" << dir << "/tmp/</tmp_path>\n"
                                     << "  <user_files_path>" << dir << "/user_files/</user_files_path>\n"
                                     << "  <format_schema_path>" << dir << "/format_schemas/</format_schema_path>\n"
                                     << "  <mark_cache_size>67108864</mark_cache_size>\n"
                                     << "  <users_config>" << dir << "/users.xml</users_config>\n"
                                     << "  <default_profile>default</default_profile>\n"
                                     << "  <default_database>default</default_database>\n"
                                     << "</yandex>\n";
  std::ofstream(dir + "/users.xml")
      << "<?xml version=\"1.0\"?>\n<yandex>\n"
      << "  <profiles><default></default></profiles>\n"
      << "  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
      << "<profile>default</profile><quota>default</quota></default></users>\n"
      << "  <quotas><default></default></quotas>\n</yandex>\n";
}

}  // namespace

std::vector<std::string> ClickHouseServerCommand() {
  if (access("/usr/bin/clickhouse", X_OK) == 0) return {"/usr/bin/clickhouse", "server"};
  if (access("/usr/sbin/clickhouse-server", X_OK) == 0) return {"/usr/sbin/clickhouse-server"};
  return {};
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ClickHouseTestServer::Start() {
  std::vector<std::string> argv = ClickHouseServerCommand();
  if (argv.empty()) return "no ClickHouse server installed (apt-get install clickhouse-server)";
  dir_ = MakeTempDir("sluice_clickhouse_");
  if (dir_.empty()) return "cannot make a temporary directory";
  // The port is free when picked; another process may take it before the
  // server binds it, so a server that exits at once is tried again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreeLoopbackPort();
    if (port_ == 0) return "no free port on 127.0.0.1";
    WriteConfig(dir_, port_);
    std::vector<std::string> command = argv;
    command.push_back("--config-file=" + dir_ + "/config.xml");
    if (!process_.Start(command, dir_ + "/stdout", dir_ + "/stderr")) return "cannot start " + argv[0];
    for (uint64_t start = NowMs(); NowMs() - start < kWaitMs && process_.running();) {
      if (Ping(port_) == "Ok.\n") return "";
      usleep(20 * 1000);
    }
    if (process_.running()) return "ClickHouse did not answer /ping on port " + std::to_string(port_);
  }
  return "ClickHouse exited at start three times: " + process_.Describe();
}

void ClickHouseTestServer::Stop() {
  if (process_.running()) process_.Terminate(kWaitMs);
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    dir_.clear();
  }
}

std::string ClickHouseTestServer::Url(const std::string& database) const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/?database=" + database;
}

}  // namespace sluice::testing
