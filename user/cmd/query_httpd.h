// `sluice query --httpd`: trace_processor's HTTP interface (what
// `trace_processor_shell -D` serves), so Perfetto's Python API and other
// clients of it query a trace through sluice. The endpoints are
// user/query/rpc/trace_processor_rpc.h's methods; HTTP itself is Debian's
// cpp-httplib, in a plugin loaded when the server starts
// (user/cmd/httpd/query_http_server.h says why).
//
// Safe by default: it binds 127.0.0.1 (another address takes an explicit
// --http-ip-address and prints a warning); a request from a browser page
// (an Origin header) is refused unless the origin is the Perfetto UI's or
// one given on the command line, as upstream's server does; a request body
// over 64 MiB is refused with 413, and an upload over the trace limit fails.
// It serves until SIGINT, SIGTERM or SIGHUP.
#ifndef SLUICE_USER_CMD_QUERY_HTTPD_H_
#define SLUICE_USER_CMD_QUERY_HTTPD_H_

#include "user/cmd/httpd/query_http_server.h"

namespace sluice {

class TraceProcessorRpc;

// Serves `rpc` until a signal ends the process (exit status 0), at once,
// even with clients connected. Returns 1 when the address cannot be bound or
// the socket fails, or the plugin cannot be loaded (one line on stderr).
int ServeQueryHttp(const QueryHttpdOptions& options, TraceProcessorRpc* rpc);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_QUERY_HTTPD_H_
