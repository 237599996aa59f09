// `sluice query --httpd`: trace_processor's HTTP interface (what
// `trace_processor_shell -D` serves), so Perfetto's Python API and other
// clients of it query a trace through sluice. The endpoints are
// user/query/rpc/trace_processor_rpc.h's methods; HTTP itself is Debian's
// cpp-httplib.
//
// Safe by default: it binds 127.0.0.1 (another address takes an explicit
// --http-ip-address and prints a warning); a request from a browser page
// (an Origin header) is refused unless the origin is the Perfetto UI's or
// one given on the command line, as upstream's server does; a request body
// over 64 MiB is refused with 413, and an upload over the trace limit fails.
// It serves until SIGINT, SIGTERM or SIGHUP.
#ifndef SLUICE_USER_CMD_QUERY_HTTPD_H_
#define SLUICE_USER_CMD_QUERY_HTTPD_H_

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

class TraceProcessorRpc;

struct QueryHttpdOptions {
  std::string ip_address = "127.0.0.1";
  int port = 9001;  // trace_processor's; 0 picks a free one (printed).
  std::vector<std::string> extra_cors_origins;
};

// Serves `rpc` until a signal ends the process (exit status 0), at once,
// even with clients connected. Returns 1 when the address cannot be bound or
// the socket fails (one line on stderr).
int ServeQueryHttp(const QueryHttpdOptions& options, TraceProcessorRpc* rpc);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_QUERY_HTTPD_H_
