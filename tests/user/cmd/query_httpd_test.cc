// `sluice query --httpd` as a client sees it over HTTP: the endpoints, the
// browser-origin rule, the size limit, malformed requests, the port in use,
// stopping on SIGTERM, and a broken plugin. Perfetto's own Python client is
// run against it by query_httpd_python_test.cc.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "perfetto/trace_processor/trace_processor.pb.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

constexpr char kTrace[] = "tests/data/query/loss_kernel.pftrace";
// Bounds for waits on conditions; only a broken server takes this long.
constexpr uint64_t kWaitMs = 120000;

// A server process, and the port it said it listens on.
class Server {
 public:
  explicit Server(const std::string& dir) : dir_(dir) {}
  ~Server() { process_.Terminate(10000); }

  // Starts `sluice query --httpd --http-port 0 ARGS...` (or `binary` with
  // `args` as given) and waits for its "serving on" line.
  bool Start(const std::vector<std::string>& args, const std::string& binary = "") {
    std::vector<std::string> argv;
    if (binary.empty()) {
      argv = {testing::SluiceBinDir() + "/sluice", "query", "--httpd", "--http-port", "0"};
    } else {
      argv = {binary};
    }
    argv.insert(argv.end(), args.begin(), args.end());
    if (!process_.Start(argv, dir_ + "/out", dir_ + "/err")) return false;
    const std::regex serving("serving on http://127\\.0\\.0\\.1:(\\d+)");
    for (uint64_t start = testing::NowMs(); testing::NowMs() - start < kWaitMs;) {
      std::smatch m;
      std::string err = process_.Stderr();
      if (std::regex_search(err, m, serving)) {
        port_ = std::stoi(m[1]);
        return true;
      }
      if (!process_.running()) return false;
      usleep(10000);
    }
    return false;
  }

  int port() const { return port_; }
  testing::ChildProcess& process() { return process_; }

 private:
  std::string dir_;
  testing::ChildProcess process_;
  int port_ = 0;
};

class QueryHttpdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("sluice_httpd_test_");
    server_ = std::make_unique<Server>(dir_);
    ASSERT_TRUE(server_->Start({kTrace})) << server_->process().Describe();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(kWaitMs / 1000);
    client_->set_keep_alive(true);  // One connection for every request, as Python's client.
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    testing::RemoveTempDir(dir_);
  }

  perfetto::protos::QueryResult Query(const std::string& sql, const httplib::Headers& headers = {}) {
    perfetto::protos::QueryArgs args;
    args.set_sql_query(sql);
    perfetto::protos::QueryResult result;
    httplib::Result res = client_->Post("/query", headers, args.SerializeAsString(), "application/x-protobuf");
    EXPECT_TRUE(res) << httplib::to_string(res.error());
    if (!res) return result;
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Transfer-Encoding"), "chunked");
    EXPECT_TRUE(result.ParseFromString(res->body));
    return result;
  }

  std::string dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(QueryHttpdTest, StatusSaysTheTraceLoadedFromTheCommandLine) {
  httplib::Result res = client_->Get("/status");
  ASSERT_TRUE(res);
  perfetto::protos::StatusResult status;
  ASSERT_TRUE(status.ParseFromString(res->body));
  EXPECT_EQ(status.loaded_trace_name(), "loss_kernel.pftrace");
  EXPECT_EQ(status.api_version(), 14);
}

TEST_F(QueryHttpdTest, AQueryStreamsItsRowsInBatches) {
  perfetto::protos::QueryResult result = Query("select * from sched union all select * from sched");
  EXPECT_EQ(result.error(), "");
  ASSERT_GT(result.batch_size(), 1);
  EXPECT_TRUE(result.batch(result.batch_size() - 1).is_last_batch());
  size_t cells = 0;
  for (const auto& batch : result.batch()) cells += static_cast<size_t>(batch.cells_size());
  EXPECT_EQ(cells, 2 * 14429u * static_cast<size_t>(result.column_names_size()));
}

TEST_F(QueryHttpdTest, ABadQueryGetsItsErrorInTheResult) {
  EXPECT_EQ(Query("select nope from sched").error(), "SQL error at line 1 column 8: no such column: nope");
}

TEST_F(QueryHttpdTest, OnlyThePerfettoUiMayCallFromABrowser) {
  perfetto::protos::QueryArgs args;
  args.set_sql_query("select 1");
  httplib::Result foreign =
      client_->Post("/query", {{"Origin", "https://evil.example"}}, args.SerializeAsString(), "application/x-protobuf");
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->status, 403);
  EXPECT_FALSE(foreign->has_header("Access-Control-Allow-Origin"));

  httplib::Result ui =
      client_->Post("/query", {{"Origin", "https://ui.perfetto.dev"}}, args.SerializeAsString(), "application/x-protobuf");
  ASSERT_TRUE(ui);
  EXPECT_EQ(ui->status, 200);
  EXPECT_EQ(ui->get_header_value("Access-Control-Allow-Origin"), "https://ui.perfetto.dev");

  httplib::Result preflight = client_->Options("/query", {{"Origin", "https://ui.perfetto.dev"}});
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Methods"), "POST, GET, OPTIONS");
}

TEST_F(QueryHttpdTest, ABodyOverTheLimitIsRefusedAndTheServerServesOn) {
  std::string body((64 << 20) + 1, 'x');
  httplib::Result res = client_->Post("/parse", body, "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(Query("select count(*) from sched").batch(0).varint_cells(0), 14429);
}

// Sends bytes that are no proper HTTP request on a socket of their own and
// returns the reply's status line ("" if the server closed without one).
// The socket stays open for writing: a client that half-closes gets no
// reply from cpp-httplib, which takes it for gone.
std::string StatusLineFor(int port, const std::string& bytes) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    char c;
    while (reply.find("\r\n") == std::string::npos && read(fd, &c, 1) == 1) reply += c;
  }
  close(fd);
  return reply.substr(0, reply.find("\r\n"));
}

// What a client sees on a connection of its own: the heads of the replies
// that came, in order, and whether the server then closed the connection
// cleanly (a FIN: read(2) returned 0; a reset or kWaitMs without a byte is
// not). Replies must carry a Content-Length.
struct ConnectionSeen {
  std::vector<std::string> heads;
  bool closed_cleanly = false;
};

// Writes `request`, then reads until the connection ends.
ConnectionSeen RepliesUntilClosed(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval patience{static_cast<time_t>(kWaitMs / 1000), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ConnectionSeen seen;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return seen;
  }
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string bytes;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) bytes.append(buf, static_cast<size_t>(n));
  seen.closed_cleanly = n == 0;
  close(fd);
  // Split what came into replies: a head, then Content-Length bytes.
  for (size_t at = 0; at < bytes.size();) {
    const size_t head_end = bytes.find("\r\n\r\n", at);
    if (head_end == std::string::npos) break;
    const std::string head = bytes.substr(at, head_end - at);
    seen.heads.push_back(head);
    std::smatch length;
    at = head_end + 4;
    if (std::regex_search(head, length, std::regex("\r\ncontent-length: *([0-9]+)", std::regex::icase)))
      at += std::stoul(length[1]);
  }
  return seen;
}

bool SaysClose(const std::string& head) {
  return std::regex_search(head, std::regex("\r\nconnection: *close\r?$", std::regex::icase | std::regex::multiline));
}

// A connection carries one request: the reply says so and the server closes
// the connection after it (query_http_server.cc says why: an idle kept
// connection cost the server ~180 wake-ups a second). A client that keeps
// its connection, as Python's does, opens a new one for its next request.
TEST_F(QueryHttpdTest, EachReplyClosesItsConnectionAndAClientThatKeepsItsOwnGoesOn) {
  const ConnectionSeen seen = RepliesUntilClosed(server_->port(), "GET /status HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(seen.heads.size(), 1u);
  EXPECT_EQ(seen.heads[0].substr(0, seen.heads[0].find("\r\n")), "HTTP/1.1 200 OK");
  EXPECT_TRUE(SaysClose(seen.heads[0])) << seen.heads[0];
  EXPECT_TRUE(seen.closed_cleanly);
  for (int i = 0; i < 3; i++) EXPECT_EQ(Query("select 1").batch(0).varint_cells(0), 1);
}

// A POST from a foreign page is refused after its body was read, so the
// client gets the whole 403 and then a clean close. Refused before its body
// was read, what the server left unread would reset the connection, which
// may take the reply with it; and when connections were kept, it was read as
// the next request (in about 3% of runs of the test above, a 400 for the
// UI's query). A body longer than the library's 4 KiB read buffer shows it
// every time.
TEST_F(QueryHttpdTest, ARefusedPostGetsItsWholeReplyAndACleanClose) {
  perfetto::protos::QueryArgs args;
  args.set_sql_query("select 1 -- " + std::string(16 << 10, 'x'));
  const std::string body = args.SerializeAsString();
  const ConnectionSeen seen =
      RepliesUntilClosed(server_->port(), "POST /query HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\n"
                                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(seen.heads.size(), 1u);
  EXPECT_EQ(seen.heads[0].substr(0, seen.heads[0].find("\r\n")), "HTTP/1.1 403 Forbidden");
  EXPECT_TRUE(seen.closed_cleanly);
}

TEST_F(QueryHttpdTest, MalformedRequestsGetAnErrorAndTheServerServesOn) {
  const int port = server_->port();
  EXPECT_EQ(StatusLineFor(port, "GARBAGE\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(StatusLineFor(port, "GET /status HTTP/9.9\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(StatusLineFor(port, "GET /" + std::string(10000, 'a') + " HTTP/1.1\r\n\r\n"), "HTTP/1.1 414 URI Too Long");
  // An unreadable length reads as none: an empty QueryArgs, an empty query.
  EXPECT_EQ(StatusLineFor(port, "POST /query HTTP/1.1\r\nContent-Length: nope\r\n\r\n"), "HTTP/1.1 200 OK");
  httplib::Result res = client_->Post("/query", "\xff\xff\xff", "application/x-protobuf");
  ASSERT_TRUE(res);
  perfetto::protos::QueryResult result;
  ASSERT_TRUE(result.ParseFromString(res->body));
  EXPECT_EQ(result.error(), "the request is not a QueryArgs message");
  httplib::Result unknown = client_->Get("/websocket");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(Query("select 1").batch(0).varint_cells(0), 1);
}

TEST_F(QueryHttpdTest, SigtermStopsItWhileAClientIsConnected) {
  ASSERT_TRUE(client_->Get("/status"));
  // Connected, with no request sent yet: a server thread waits on it.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  server_->process().Signal(SIGTERM);
  ASSERT_TRUE(server_->process().Wait(kWaitMs));
  EXPECT_TRUE(server_->process().exited_normally_with(0)) << server_->process().Describe();
  EXPECT_FALSE(client_->Get("/status"));  // Nothing listens any more.
  close(fd);
}

TEST_F(QueryHttpdTest, APortInUseIsAnErrorThatNamesTheFlag) {
  Server second(dir_);
  std::string port = std::to_string(server_->port());
  EXPECT_FALSE(second.Start({"--httpd", "--http-port", port, kTrace}, testing::SluiceBinDir() + "/sluice-trace-processor"));
  ASSERT_TRUE(second.process().Wait(kWaitMs));
  EXPECT_TRUE(second.process().exited_normally_with(1)) << second.process().Describe();
  EXPECT_NE(second.process().Stderr().find("cannot listen on 127.0.0.1 port " + port), std::string::npos)
      << second.process().Stderr();
}

// The server is a plugin found next to the binary (user/cmd/httpd/
// query_http_server.h): a copy of sluice beside a broken one, or beside a
// library that is not the plugin, fails in one line naming the file and the
// fix, and serves nothing.
TEST(QueryHttpdPluginTest, ABrokenOrForeignPluginIsAnErrorThatNamesIt) {
  const std::string dir = testing::MakeTempDir("sluice_httpd_plugin_test_");
  std::filesystem::copy_file(testing::SluiceBinDir() + "/sluice", dir + "/sluice");
  const std::string plugin = dir + "/sluice-query-httpd.so";
  struct Case {
    std::string what, expected;
  };
  for (const Case& c : {Case{"empty", plugin + ", which cannot be loaded"},
                        Case{"libz", plugin + " has no sluice_query_http_serve"}}) {
    std::filesystem::remove(plugin);
    if (c.what == "empty") {
      std::ofstream(plugin).flush();
    } else {
      Dl_info zlib{};  // zlib, which the tests link: a library, not the plugin.
      ASSERT_NE(dladdr(reinterpret_cast<void*>(&zlibVersion), &zlib), 0);
      std::filesystem::copy_file(zlib.dli_fname, plugin);
    }
    const testing::CommandResult r = testing::RunToCompletion(
        {dir + "/sluice", "query", "--httpd", "--http-port", "0", std::string(kTrace)}, dir);
    EXPECT_EQ(r.exit_code, 1) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find("reinstall sluice, or run make"), std::string::npos) << c.what << ": " << r.err;
    EXPECT_EQ(r.err.find("serving on"), std::string::npos) << c.what << ": " << r.err;
  }
  testing::RemoveTempDir(dir);
}

TEST(TraceProcessorShellArgsTest, UpstreamsFlagsThatChangeAnswersAreRefusedByName) {
  std::string dir = testing::MakeTempDir("sluice_httpd_test_");
  testing::CommandResult r = testing::RunToCompletion(
      {testing::SluiceBinDir() + "/sluice-trace-processor", "-D", "--add-sql-package", "/tmp/x", kTrace}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--add-sql-package is not supported by sluice"), std::string::npos) << r.err;
  testing::RemoveTempDir(dir);
}

}  // namespace
}  // namespace sluice
