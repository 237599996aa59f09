// sluiced: the tracing service daemon. docs/SERVICE.md describes it; run
// `sluiced --help` for the flags.
#include <errno.h>
#include <grp.h>
#include <malloc.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_server.h"
#include "service/tracing_service.h"
#include "shm/base/command_line.h"
#include "shm/base/string_util.h"
#include "shm/base/units.h"

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
  --max-shm-size SIZE        largest SMB a producer may get (default 32mb;
                             64kb..1gb)
  --max-buffer-size SIZE     sum of all sessions' buffers (default 2gb)
  --foreground               stay in the foreground and log to stderr (what
                             systemd wants); otherwise daemonize and use syslog
  -h, --help                 this text
)" SLUICE_SIZE_HELP R"(
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

struct SluicedArgs {
  IpcServerOptions ipc;
  TracingServiceOptions service;
  bool foreground = false;
};

// 0..0777 in octal, as chmod takes it ("0660", "660").
bool ParseMode(const char* text, mode_t* mode) {
  std::string_view s(text);
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 8);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v > 0777) return false;
  *mode = static_cast<mode_t>(v);
  return true;
}

// "0,1000": whole uids, no signs ("-1" would be 4294967295).
bool ParseUidList(const std::string& list, std::vector<uid_t>* uids) {
  size_t pos = 0;
  for (;;) {
    size_t comma = list.find(',', pos);
    uint32_t uid = 0;
    size_t len = comma == std::string::npos ? std::string::npos : comma - pos;
    if (!ParseU32(std::string_view(list).substr(pos, len), &uid)) return false;
    uids->push_back(static_cast<uid_t>(uid));
    if (comma == std::string::npos) return true;
    pos = comma + 1;
  }
}

StatusOr<SluicedArgs> ParseArgs(int argc, char** argv) {
  enum {
    kProducerSocket = kFirstLongOnly,
    kConsumerSocket,
    kSocketMode,
    kSocketGroup,
    kUidAllowlist,
    kMaxShmSize,
    kMaxBufferSize,
    kForeground,
  };
  static const struct option kOptions[] = {
      {"producer-socket", required_argument, nullptr, kProducerSocket},
      {"consumer-socket", required_argument, nullptr, kConsumerSocket},
      {"socket-mode", required_argument, nullptr, kSocketMode},
      {"socket-group", required_argument, nullptr, kSocketGroup},
      {"producer-uid-allowlist", required_argument, nullptr, kUidAllowlist},
      {"max-shm-size", required_argument, nullptr, kMaxShmSize},
      {"max-buffer-size", required_argument, nullptr, kMaxBufferSize},
      {"foreground", no_argument, nullptr, kForeground},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  SluicedArgs a;
  mode_t mode = 0660;
  gid_t group = static_cast<gid_t>(-1);
  auto handle = [&](const CommandLineArg& arg) -> Status {
    const std::string v = arg.value ? arg.value : "";
    switch (arg.id) {
      case kProducerSocket: a.ipc.producer_socket_path = v; break;
      case kConsumerSocket: a.ipc.consumer_socket_path = v; break;
      case kSocketMode:
        if (!ParseMode(arg.value, &mode))
          return Status::Error(arg.name + " takes an octal mode like 0660, not '" + v + "'");
        break;
      case kSocketGroup: {
        struct group* g = getgrnam(arg.value);
        if (!g) return Status::Error(arg.name + ": no group named '" + v + "'");
        group = g->gr_gid;
        break;
      }
      case kUidAllowlist:
        if (!ParseUidList(v, &a.service.producer_uid_allowlist))
          return Status::Error(arg.name + " takes uids like 0,1000, not '" + v + "'");
        break;
      case kMaxShmSize: {
        StatusOr<uint64_t> kb = ParseSizeKb(v);
        if (!kb.ok()) return Status::Error(arg.name + ": " + kb.status().message());
        if (*kb < 64 || *kb > (1u << 20))
          return Status::Error(arg.name + " " + v + " is out of range (64kb..1gb)");
        a.service.max_shm_size_bytes = static_cast<uint32_t>(*kb * 1024);
        break;
      }
      case kMaxBufferSize: {
        StatusOr<uint64_t> kb = ParseSizeKb(v);
        if (!kb.ok()) return Status::Error(arg.name + ": " + kb.status().message());
        a.service.max_total_buffer_bytes = *kb * 1024;
        break;
      }
      case kForeground: a.foreground = true; break;
      case 'h': return HelpRequested();
      default: return Status::Error("unexpected argument '" + v + "'");
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(ParseCommandLine(argc, argv, "h", kOptions, handle));
  a.ipc.producer_listen.mode = a.ipc.consumer_listen.mode = mode;
  a.ipc.producer_listen.group = a.ipc.consumer_listen.group = group;
  return a;
}

// systemd socket activation (sd_listen_fds protocol, without libsystemd):
// with LISTEN_PID = us and LISTEN_FDS=2, fds 3 and 4 replace the paths.
void AdoptActivatedSockets(IpcServerOptions* ipc) {
  const char* listen_pid = getenv("LISTEN_PID");
  const char* listen_fds = getenv("LISTEN_FDS");
  uint64_t pid = 0, nfds = 0;
  if (!listen_pid || !listen_fds || !ParseU64(listen_pid, &pid) ||
      pid != static_cast<uint64_t>(getpid()) || !ParseU64(listen_fds, &nfds))
    return;
  if (nfds != 2)
    Die("socket activation passed " + std::to_string(nfds) + " fds; expected 2 (producer, consumer)");
  ipc->producer_listen_fd = 3;
  ipc->consumer_listen_fd = 4;
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
}

// SIGINT/SIGTERM, blocked and read from the returned signalfd by the loop;
// SIGPIPE is never wanted (sends use MSG_NOSIGNAL, but be safe).
int OpenStopSignalFd() {
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) Die(std::string("signalfd failed: ") + strerror(errno));
  return sfd;
}

// First signal: stop the sessions properly (final flush, TraceStats, files
// closed), for at most kShutdownGraceMs; a second signal: now. Lives as long
// as the loop runs.
class StopOnSignals {
 public:
  StopOnSignals(EventLoop* loop, TracingService* service, int sfd)
      : loop_(loop), service_(service), sfd_(sfd) {
    loop_->AddFdWatch(sfd_, EPOLLIN, [this](uint32_t) { OnSignalFd(); });
  }
  ~StopOnSignals() { loop_->RemoveFdWatch(sfd_); }

 private:
  void OnSignalFd() {
    signalfd_siginfo info;
    while (read(sfd_, &info, sizeof(info)) == sizeof(info)) {
      LogLine(std::string("sluiced: ") + strsignal(static_cast<int>(info.ssi_signo)) +
              (signals_ == 0 ? ", stopping sessions and exiting" : ", exiting now"));
      if (signals_++ > 0) {
        loop_->Quit();
        continue;
      }
      service_->DisableAllSessions();
      WaitForSessions(kShutdownGraceMs);
    }
  }
  void WaitForSessions(int left_ms) {
    if (service_->AllSessionsDisabled() || left_ms <= 0) {
      loop_->Quit();
      return;
    }
    loop_->PostDelayedTask([this, left_ms] { WaitForSessions(left_ms - 50); }, 50);
  }

  EventLoop* const loop_;
  TracingService* const service_;
  const int sfd_;
  int signals_ = 0;
};

// Gives freed heap back to the kernel. glibc keeps what is freed: the
// buffers of hundreds of producer connections after a burst, or the frames of
// a large ReadBuffers answer (glibc's mmap threshold rises after the first
// large free, so later large blocks come from the heap too). Without this the
// daemon would hold tens of MiB it no longer uses. Checked once a second;
// malloc_trim (which also releases free pages inside the heap) runs when more
// than kFreeBytesToTrim of it is free. Lives as long as the loop runs.
class TrimFreeHeap {
 public:
  static constexpr uint32_t kPeriodMs = 1000;
  static constexpr size_t kFreeBytesToTrim = 2u << 20;
  explicit TrimFreeHeap(EventLoop* loop) : loop_(loop), alive_(std::make_shared<bool>(true)) {
    Schedule();
  }
  ~TrimFreeHeap() { *alive_ = false; }

 private:
  void Schedule() {
    loop_->PostDelayedTask(
        [this, alive = alive_] {
          if (!*alive) return;
          if (mallinfo2().fordblks > kFreeBytesToTrim) malloc_trim(0);
          Schedule();
        },
        kPeriodMs);
  }

  EventLoop* const loop_;
  std::shared_ptr<bool> alive_;
};

// Runs the service until a stop signal on `sfd` ends the loop.
void Serve(const SluicedArgs& args, int sfd) {
  EventLoop loop;
  TracingService service(&loop, args.service);
  auto server = IpcServer::Create(&service, args.ipc);
  if (!server.ok()) Die(server.status().message());
  const IpcServerOptions& ipc = args.ipc;
  {
    StopOnSignals stop(&loop, &service, sfd);
    TrimFreeHeap trim(&loop);
    LogLine("sluiced: listening on " +
            (ipc.producer_listen_fd >= 0 ? std::string("fd 3") : ipc.producer_socket_path) + " (producers) and " +
            (ipc.consumer_listen_fd >= 0 ? std::string("fd 4") : ipc.consumer_socket_path) + " (consumers)");
    loop.Run();
  }
  server.value().reset();  // Connections first: producers disconnect, SMBs scraped.
}

int Main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv);
  if (!args.ok()) return CommandLineExit(args.status(), "sluiced", kUsage);
  g_foreground = args->foreground;
  AdoptActivatedSockets(&args->ipc);
  if (!g_foreground) {
    openlog("sluiced", LOG_PID, LOG_DAEMON);
    if (daemon(0, 0) != 0) Die(std::string("daemon() failed: ") + strerror(errno));
  }
  args->service.log = LogLine;
  // libprotobuf logs (e.g. invalid UTF-8 in a string field) for input a peer
  // controls: a producer could flood our log. Its errors are already handled
  // (the message is dropped or its field ignored), so silence them.
  google::protobuf::SetLogHandler(nullptr);
  int sfd = OpenStopSignalFd();
  Serve(*args, sfd);
  close(sfd);
  if (args->ipc.producer_listen_fd < 0) unlink(args->ipc.producer_socket_path.c_str());
  if (args->ipc.consumer_listen_fd < 0) unlink(args->ipc.consumer_socket_path.c_str());
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
