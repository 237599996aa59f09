// The HTTP server of `sluice query --httpd`, built as a plugin of its own
// (sluice-query-httpd.so) that user/cmd/query_httpd.cc loads when a server
// starts. Why a plugin: Debian's cpp-httplib links OpenSSL and Brotli, and
// those libraries, mapped and relocated at every start of `sluice`, cost
// each start about 5 ms of CPU (docs/PERFORMANCE.md, "Start-up") that only
// --httpd uses (shm/base/shared_library.h has the general case).
//
// This header is the plugin's whole interface. The plugin calls sluice only
// through QueryHttpEndpoints' virtual functions, so it needs no symbol of
// the program that loads it (it links with --no-undefined), and the one
// entry point has C linkage, found by name.
#ifndef SLUICE_USER_CMD_HTTPD_QUERY_HTTP_SERVER_H_
#define SLUICE_USER_CMD_HTTPD_QUERY_HTTP_SERVER_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct QueryHttpdOptions {
  std::string ip_address = "127.0.0.1";
  int port = 9001;  // trace_processor's; 0 picks a free one (printed).
  std::vector<std::string> extra_cors_origins;
};

// trace_processor's RPC methods, as the endpoints call them
// (user/query/rpc/trace_processor_rpc.h says what each does). One call at a
// time: the server serialises them.
class QueryHttpEndpoints {
 public:
  virtual ~QueryHttpEndpoints() = default;
  virtual std::string GetStatus() = 0;                              // GET /status
  virtual std::string AppendTraceData(std::string_view chunk) = 0;  // POST /parse
  virtual void NotifyEndOfFile() = 0;                               // GET /notify_eof
  // GET /restore_initial_tables: "" or why it failed (for the server's log).
  virtual std::string RestoreInitialTables() = 0;
  // POST /query: each QueryResult message goes to `sink`, which returns
  // false once the client is gone.
  virtual void Query(std::string_view query_args, const std::function<bool(std::string_view)>& sink) = 0;
  virtual std::string ComputeTraceSummary(std::string_view summary_args) = 0;  // POST /trace_summary
  virtual std::string ComputeMetric(std::string_view metric_args) = 0;         // POST /compute_metric
  virtual std::string DisableAndReadMetatrace() = 0;                        // GET /disable_and_read_metatrace
};

// The plugin's file name: next to the sluice binary in a build tree, in
// $(PREFIX)/lib/sluice installed.
inline constexpr char kQueryHttpServerPlugin[] = "sluice-query-httpd.so";
// The entry point's symbol, of type QueryHttpServeFunction.
inline constexpr char kQueryHttpServeSymbol[] = "sluice_query_http_serve";

}  // namespace sluice

// Serves `endpoints` until SIGINT, SIGTERM or SIGHUP ends the process (exit
// status 0), at once, even with clients connected. Returns 1 when the
// address cannot be bound or the socket fails (one line on stderr).
extern "C" int sluice_query_http_serve(const sluice::QueryHttpdOptions* options,
                                       sluice::QueryHttpEndpoints* endpoints);
using QueryHttpServeFunction = decltype(sluice_query_http_serve);

#endif  // SLUICE_USER_CMD_HTTPD_QUERY_HTTP_SERVER_H_
