// sluiced: the tracing service daemon. docs/SERVICE.md describes it; run
// `sluiced --help` for the flags.
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_server.h"
#include "service/tracing_service.h"

namespace sluice {
namespace {

constexpr char kUsage[] = R"(usage: sluiced [options]

The sluice tracing service: owns the trace buffers, accepts producers
(sluice-probes) and consumers (sluice record --daemon, sluice stats).

  --producer-socket PATH     producer socket (default /run/sluice/producer.sock)
  --consumer-socket PATH     consumer socket (default /run/sluice/consumer.sock)
  --socket-mode MODE         octal permissions of both sockets (default 0660)
  --socket-group NAME        group owning both sockets (default: root's group)
  --producer-uid-allowlist U1,U2,...
                             only these uids may connect as producers
                             (default: anyone who can open the socket)
  --max-shm-size BYTES       largest SMB a producer may get (default 33554432)
  --max-buffer-size BYTES    sum of all sessions' buffers (default 2147483648)
  --foreground               stay in the foreground and log to stderr (what
                             systemd wants); otherwise daemonize and use syslog
  --help                     this text

Socket activation: with LISTEN_FDS=2 (systemd), fd 3 is the producer socket
and fd 4 the consumer socket, and the path options are ignored.
)";

bool g_foreground = false;
// Longest a session's stop may take: flush and stop timeouts (5 s each by
// default) plus the last file write.
constexpr int kShutdownGraceMs = 12000;

void LogLine(const std::string& line) {
  if (g_foreground) {
    fprintf(stderr, "%s\n", line.c_str());
  } else {
    syslog(LOG_INFO, "%s", line.c_str());
  }
}

[[noreturn]] void Die(const std::string& message) {
  LogLine("sluiced: " + message);
  if (!g_foreground) fprintf(stderr, "sluiced: %s\n", message.c_str());
  exit(1);
}

bool ParseUint(const char* s, uint64_t* out, int base = 10) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s, &end, base);
  if (errno || !end || *end || end == s) return false;
  *out = v;
  return true;
}

int Main(int argc, char** argv) {
  IpcServerOptions ipc;
  TracingServiceOptions service_options;
  mode_t mode = 0660;
  gid_t group = static_cast<gid_t>(-1);
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Die(a + " needs a value (see --help)");
      return argv[++i];
    };
    uint64_t v = 0;
    if (a == "--help" || a == "-h") {
      fputs(kUsage, stdout);
      return 0;
    } else if (a == "--foreground") {
      g_foreground = true;
    } else if (a == "--producer-socket") {
      ipc.producer_socket_path = value();
    } else if (a == "--consumer-socket") {
      ipc.consumer_socket_path = value();
    } else if (a == "--socket-mode") {
      if (!ParseUint(value(), &v, 8) || v > 0777) Die("--socket-mode takes an octal mode like 0660");
      mode = static_cast<mode_t>(v);
    } else if (a == "--socket-group") {
      const char* name = value();
      struct group* g = getgrnam(name);
      if (!g) Die(std::string("--socket-group: no group named '") + name + "'");
      group = g->gr_gid;
    } else if (a == "--producer-uid-allowlist") {
      std::string list = value();
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (!ParseUint(item.c_str(), &v)) Die("--producer-uid-allowlist takes uids like 0,1000");
        service_options.producer_uid_allowlist.push_back(static_cast<uid_t>(v));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (a == "--max-shm-size") {
      if (!ParseUint(value(), &v) || v < 65536 || v > (1u << 30)) Die("--max-shm-size: 65536..1073741824");
      service_options.max_shm_size_bytes = static_cast<uint32_t>(v);
    } else if (a == "--max-buffer-size") {
      if (!ParseUint(value(), &v)) Die("--max-buffer-size takes a number of bytes");
      service_options.max_total_buffer_bytes = v;
    } else {
      Die("unknown option '" + a + "' (see --help)");
    }
  }
  ipc.producer_listen.mode = ipc.consumer_listen.mode = mode;
  ipc.producer_listen.group = ipc.consumer_listen.group = group;

  // systemd socket activation (sd_listen_fds protocol, without libsystemd).
  const char* listen_pid = getenv("LISTEN_PID");
  const char* listen_fds = getenv("LISTEN_FDS");
  uint64_t pid = 0, nfds = 0;
  if (listen_pid && listen_fds && ParseUint(listen_pid, &pid) && pid == static_cast<uint64_t>(getpid()) &&
      ParseUint(listen_fds, &nfds)) {
    if (nfds != 2) Die("socket activation passed " + std::to_string(nfds) + " fds; expected 2 (producer, consumer)");
    ipc.producer_listen_fd = 3;
    ipc.consumer_listen_fd = 4;
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
  }

  if (!g_foreground) {
    openlog("sluiced", LOG_PID, LOG_DAEMON);
    if (daemon(0, 0) != 0) Die(std::string("daemon() failed: ") + strerror(errno));
  }
  service_options.log = LogLine;
  // libprotobuf logs (e.g. invalid UTF-8 in a string field) for input a peer
  // controls: a producer could flood our log. Its errors are already handled
  // (the message is dropped or its field ignored), so silence them.
  google::protobuf::SetLogHandler(nullptr);

  // SIGINT/SIGTERM end the loop; SIGPIPE is never wanted (sends use
  // MSG_NOSIGNAL, but be safe).
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) Die(std::string("signalfd failed: ") + strerror(errno));

  EventLoop loop;
  {
    TracingService service(&loop, service_options);
    auto server = IpcServer::Create(&service, ipc);
    if (!server.ok()) Die(server.status().message());
    // First signal: stop the sessions properly (final flush, TraceStats,
    // files closed), for at most kShutdownGraceMs; a second signal: now.
    int signals = 0;
    std::function<void(int)> wait_for_sessions = [&](int left_ms) {
      if (service.AllSessionsDisabled() || left_ms <= 0) {
        loop.Quit();
        return;
      }
      loop.PostDelayedTask([&, left_ms] { wait_for_sessions(left_ms - 50); }, 50);
    };
    loop.AddFdWatch(sfd, EPOLLIN, [&](uint32_t) {
      signalfd_siginfo info;
      while (read(sfd, &info, sizeof(info)) == sizeof(info)) {
        LogLine(std::string("sluiced: ") + strsignal(static_cast<int>(info.ssi_signo)) +
                (signals == 0 ? ", stopping sessions and exiting" : ", exiting now"));
        if (signals++ > 0) {
          loop.Quit();
          continue;
        }
        service.DisableAllSessions();
        wait_for_sessions(kShutdownGraceMs);
      }
    });
    LogLine("sluiced: listening on " +
            (ipc.producer_listen_fd >= 0 ? std::string("fd 3") : ipc.producer_socket_path) + " (producers) and " +
            (ipc.consumer_listen_fd >= 0 ? std::string("fd 4") : ipc.consumer_socket_path) + " (consumers)");
    loop.Run();
    loop.RemoveFdWatch(sfd);
    server.value().reset();  // Connections first: producers disconnect, SMBs scraped.
  }
  close(sfd);
  if (ipc.producer_listen_fd < 0) unlink(ipc.producer_socket_path.c_str());
  if (ipc.consumer_listen_fd < 0) unlink(ipc.consumer_socket_path.c_str());
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
