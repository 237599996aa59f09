#include "user/cmd/httpd/query_http_server.h"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace sluice {

namespace {

constexpr char kCommand[] = "sluice query";
constexpr char kProtobuf[] = "application/x-protobuf";
// Upstream's limit for one request: a chunk of an upload or a query.
constexpr size_t kMaxRequestBytes = 64 << 20;
// Requests served at once: cpp-httplib gives each connection a thread, and a
// connection carries one request (below). A 17th waits for a thread.
constexpr size_t kMaxClients = 16;
// How long a connected client may take to send its request (it is polled
// meanwhile, below).
constexpr time_t kFirstRequestTimeoutSeconds = 5;

// The Perfetto UI, served from the web and from a local checkout.
const char* const kDefaultCorsOrigins[] = {"https://ui.perfetto.dev", "http://localhost:10000",
                                           "http://127.0.0.1:10000"};

constexpr char kHelpPage[] =
    "sluice: Perfetto trace_processor's HTTP interface\n\n"
    "From Python (Perfetto's API, pip install perfetto):\n"
    "  from perfetto.trace_processor import TraceProcessor\n"
    "  tp = TraceProcessor(addr='HOST:PORT')\n"
    "  tp.query('select * from sched limit 10').as_pandas_dataframe()\n\n"
    "Endpoints: GET /status, POST /parse, GET /notify_eof, POST /query,\n"
    "GET /restore_initial_tables, POST /trace_summary. docs/QUERY.md has more.\n";

bool IsLoopback(const std::string& address) {
  return address == "127.0.0.1" || address == "::1" || address == "localhost" ||
         address.rfind("127.", 0) == 0;
}

int Serve(const QueryHttpdOptions& options, QueryHttpEndpoints* rpc) {
  // The signals go to one thread that waits for them (below): block them
  // here, before the server's threads start and inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::vector<std::string> origins(std::begin(kDefaultCorsOrigins), std::end(kDefaultCorsOrigins));
  origins.insert(origins.end(), options.extra_cors_origins.begin(), options.extra_cors_origins.end());
  auto origin_allowed = [origins](const std::string& origin) {
    return std::any_of(origins.begin(), origins.end(), [&](const std::string& allowed) {
      return strcasecmp(allowed.c_str(), origin.c_str()) == 0;
    });
  };

  // One call into the engine at a time: the server's threads take turns.
  std::mutex engine_mutex;
  httplib::Server server;
  server.set_payload_max_length(kMaxRequestBytes);
  // One request per connection: every reply says "Connection: close" and
  // the server closes the connection after it. Why: cpp-httplib 0.11 waits
  // for a connection's next request by polling it every 10 ms, so a notebook
  // idle between two queries on a kept connection cost the server ~180
  // wake-ups a second, for hours. A client told to close opens a new
  // connection for its next request (Python's http.client does so by
  // itself; upstream's server keeps connections, and either way the client
  // needs no change). A new connection costs the server about 40 us of CPU
  // on loopback (docs/PERFORMANCE.md).
  server.set_keep_alive_max_count(1);
  server.set_keep_alive_timeout(kFirstRequestTimeoutSeconds);
  server.new_task_queue = [] { return new httplib::ThreadPool(kMaxClients); };
  server.set_read_timeout(60);
  // A reply goes out in several writes (headers, then each chunk's size,
  // data and CRLF): with Nagle's algorithm each later write waits for the
  // client's delayed ACK, 40 ms a query.
  server.set_tcp_nodelay(true);
  // Only SO_REUSEADDR: cpp-httplib's default adds SO_REUSEPORT, which lets a
  // second server bind the same port and take half the connections.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  // A page from another site must not drive the server (CSRF).
  auto foreign_origin = [&](const httplib::Request& req) {
    const std::string origin = req.get_header_value("Origin");
    return !origin.empty() && !origin_allowed(origin);
  };
  auto refuse_origin = [](httplib::Response& res) {
    res.status = 403;
    res.set_content("Origin not allowed", "text/plain");
  };
  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    const std::string origin = req.get_header_value("Origin");
    if (origin.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (foreign_origin(req)) {
      // cpp-httplib runs this before it reads a request's body: a POST
      // answered here would leave its body on a kept-alive connection, to
      // be parsed as the next request (which then got a 400). A POST is
      // refused by its route, after the body was read (`post` below).
      if (req.method == "POST") return httplib::Server::HandlerResponse::Unhandled;
      refuse_origin(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
    if (req.method == "OPTIONS") {
      res.status = 204;
      res.set_header("Access-Control-Allow-Methods", "POST, GET, OPTIONS");
      res.set_header("Access-Control-Allow-Headers", "*");
      res.set_header("Access-Control-Max-Age", "86400");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  auto reply = [](httplib::Response& res, const std::string& body) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(body, kProtobuf);
  };

  auto post = [&](const char* path, httplib::Server::Handler handler) {
    server.Post(path, [&foreign_origin, &refuse_origin, handler = std::move(handler)](const httplib::Request& req,
                                                                                       httplib::Response& res) {
      if (foreign_origin(req)) return refuse_origin(res);
      handler(req, res);
    });
  };

  server.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kHelpPage, "text/plain"); });
  server.Get("/status", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(engine_mutex);
    reply(res, rpc->GetStatus());
  });
  post("/parse", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(engine_mutex);
    reply(res, rpc->AppendTraceData(req.body));
  });
  server.Get("/notify_eof", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(engine_mutex);
    rpc->NotifyEndOfFile();
    reply(res, "");
  });
  server.Get("/restore_initial_tables", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(engine_mutex);
    const std::string failed = rpc->RestoreInitialTables();
    if (!failed.empty()) fprintf(stderr, "%s: %s\n", kCommand, failed.c_str());
    reply(res, "");
  });
  post("/query", [&](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    // Rows go out as they are stepped: each QueryResult message is one
    // chunk of a chunked reply, written while the statement runs.
    res.set_chunked_content_provider(kProtobuf, [&, args = req.body](size_t, httplib::DataSink& sink) {
      // The end of the reply is written under the lock too: writes of two
      // replies must not interleave in cpp-httplib (ThreadSanitizer saw its
      // chunk writes race with 4 clients at once).
      std::lock_guard<std::mutex> lock(engine_mutex);
      rpc->Query(args, [&sink](std::string_view message) { return sink.write(message.data(), message.size()); });
      sink.done();
      return true;
    });
  });
  post("/trace_summary", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(engine_mutex);
    reply(res, rpc->ComputeTraceSummary(req.body));
  });
  post("/compute_metric", [&](const httplib::Request& req, httplib::Response& res) {
    reply(res, rpc->ComputeMetric(req.body));
  });
  server.Get("/enable_metatrace", [&](const httplib::Request&, httplib::Response& res) { reply(res, ""); });
  server.Get("/disable_and_read_metatrace", [&](const httplib::Request&, httplib::Response& res) {
    reply(res, rpc->DisableAndReadMetatrace());
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404) {
      res.set_content("sluice serves /status, /parse, /notify_eof, /query, /restore_initial_tables and "
                      "/trace_summary; not " + req.path + "\n",
                      "text/plain");
    }
  });

  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.ip_address);
  } else if (!server.bind_to_port(options.ip_address, port)) {
    port = -1;
  }
  if (port < 0) {
    fprintf(stderr, "%s: cannot listen on %s port %d: in use or not an address of this machine; "
            "pick another with --http-port\n", kCommand, options.ip_address.c_str(), options.port);
    return 1;
  }
  if (!IsLoopback(options.ip_address)) {
    fprintf(stderr, "%s: warning: serving on %s: anyone who can reach it can read the trace and run SQL\n",
            kCommand, options.ip_address.c_str());
  }
  const std::string host =
      options.ip_address.find(':') != std::string::npos ? "[" + options.ip_address + "]" : options.ip_address;
  fprintf(stderr, "%s: serving on http://%s:%d (Python: TraceProcessor(addr='%s:%d')); Ctrl-C stops\n",
          kCommand, host.c_str(), port, host.c_str(), port);

  std::atomic<bool> listen_failed{false};
  std::thread signal_waiter([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    // cpp-httplib's stop() closes the listening socket but then waits for
    // every worker: one in a long query, or one waiting for a connected
    // client's request (up to kFirstRequestTimeoutSeconds). Nothing of the
    // server's outlives the process (the upload is an unlinked file), so
    // end it now.
    server.stop();
    fflush(stderr);
    _exit(listen_failed ? 1 : 0);
  });
  server.listen_after_bind();
  // Only a failed socket gets here (a signal ends the process above): wake
  // the waiter, which takes the signal (blocked everywhere else) and ends
  // the process with 1.
  listen_failed = true;
  fprintf(stderr, "%s: the server's socket failed; it stopped\n", kCommand);
  pthread_kill(signal_waiter.native_handle(), SIGTERM);
  signal_waiter.join();
  return 1;
}

}  // namespace
}  // namespace sluice

extern "C" int sluice_query_http_serve(const sluice::QueryHttpdOptions* options,
                                       sluice::QueryHttpEndpoints* endpoints) {
  return sluice::Serve(*options, endpoints);
}
