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
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "service/event_loop.h"
#include "service/inherited_sockets.h"
#include "service/ipc/ipc_server.h"
#include "service/relay/relay_server.h"
#include "service/tracing_service.h"
#include "shm/base/command_line.h"
#include "shm/base/heap_retention.h"
#include "shm/base/open_files_limit.h"
#include "shm/base/journal_stream.h"
#include "shm/base/string_util.h"
#include "shm/base/units.h"

namespace sluice {
namespace {

constexpr char kUsage[] = R"(usage: sluiced [options]

The sluice tracing service: owns the trace buffers, accepts producers
(sluice-probes) and consumers (sluice record --daemon, sluice stats).

  --producer-socket PATH     producer socket (default /run/sluice/producer.sock)
  --consumer-socket PATH     consumer socket (default /run/sluice/consumer.sock)
  --producer-socket-mode MODE
                             octal permissions of the producer socket
                             (default 0660; 0666 lets anyone produce)
  --consumer-socket-mode MODE
                             octal permissions of the consumer socket
                             (default 0660; consumers start kernel tracing
                             through sluice-probes: keep it to a group)
  --socket-mode MODE         both modes at once
  --socket-group NAME        group owning both sockets (default: our group)
  --producer-uid-allowlist U1,U2,...
                             only these uids may connect as producers
                             (default: anyone who can open the socket)
  --consumer-uid-allowlist U1,U2,...
  --consumer-gid-allowlist G1,G2,...
                             only these uids, and members of these groups
                             (numbers or names), may record and read traces;
                             root only if listed (default: anyone who can
                             open the socket)
  --perfetto-sockets         also listen where upstream Perfetto's programs
                             look for traced: $PERFETTO_PRODUCER_SOCK_NAME and
                             $PERFETTO_CONSUMER_SOCK_NAME, else
                             /run/perfetto/traced-producer.sock and
                             traced-consumer.sock (same modes and group).
                             Every socket takes both sluice's protocol and
                             Perfetto's: traced_probes, `perfetto` and SDK apps
                             then record through sluiced unmodified
  --relay-socket ADDR        also take relays (sluice-relay in QEMU guests or
                             containers; docs/RELAY.md): each is a machine
                             recorded with this one's sessions. ADDR: a unix
                             socket PATH (the producer socket's mode and
                             group; QEMU's socket chardev connects to it),
                             vsock:PORT, or tcp:[HOST:]PORT (127.0.0.1 when
                             no HOST)
  --max-shm-size SIZE        largest SMB a producer may get (default 32mb;
                             64kb..1gb)
  --max-buffer-size SIZE     sum of all sessions' buffers (default 2gb)
  --background               detach from the terminal (daemonize) and log to
                             syslog; by default sluiced stays in the
                             foreground and logs to stderr, as traced does
                             (so `sluiced & ... kill $!` stops it, and
                             systemd and Android init supervise it)
  --foreground               the default; accepted for older units and scripts
  -h, --help                 this text
)" SLUICE_SIZE_HELP R"(
Inherited sockets: with LISTEN_FDS=2 (systemd socket activation), fd 3 is
the producer socket and fd 4 the consumer socket; Android init passes them as
ANDROID_SOCKET_sluice_producer and ANDROID_SOCKET_sluice_consumer (and
traced's, ANDROID_SOCKET_traced_producer and _consumer, when sluiced takes
traced's place). Their
creator set their modes and owners, and the path, mode and group options are
ignored. Under systemd, readiness is reported with sd_notify (Type=notify).
)";

bool g_foreground = true;
// Where upstream Perfetto's programs look for traced on Linux when
// /run/perfetto exists (and it does once sluiced listens there).
constexpr char kPerfettoProducerSocket[] = "/run/perfetto/traced-producer.sock";
constexpr char kPerfettoConsumerSocket[] = "/run/perfetto/traced-consumer.sock";
// Longest a session's stop may take: flush and stop timeouts (5 s each by
// default) plus the last file write.
constexpr int kShutdownGraceMs = 12000;

// In the foreground stderr may be the journal: the priority goes in a "<N>"
// prefix (shm/base/journal_stream.h), so that errors show in
// `journalctl -p err`.
void LogLine(const std::string& line, int priority = LOG_INFO) {
  if (g_foreground) {
    fprintf(stderr, "%s%s\n", StderrPriorityPrefix(priority).c_str(), line.c_str());
  } else {
    syslog(priority, "%s", line.c_str());
  }
}

[[noreturn]] void Die(const std::string& message) {
  LogLine("sluiced: " + message, LOG_ERR);
  if (!g_foreground) fprintf(stderr, "sluiced: %s\n", message.c_str());
  sd_notifyf(0, "STATUS=%s", message.c_str());
  exit(1);
}

struct SluicedArgs {
  IpcServerOptions ipc;
  TracingServiceOptions service;
  std::optional<RelayAddress> relay;
  int relay_listen_fd = -1;  // sluice-relay.socket's (systemd).
  bool foreground = true;
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

// "0,sluice": gids or group names.
Status ParseGroupList(const std::string& option, const std::string& list, std::vector<gid_t>* gids) {
  size_t pos = 0;
  for (;;) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    uint32_t gid = 0;
    if (ParseU32(item, &gid)) {
      gids->push_back(static_cast<gid_t>(gid));
    } else if (struct group* g = item.empty() ? nullptr : getgrnam(item.c_str())) {
      gids->push_back(g->gr_gid);
    } else {
      return Status::Error(option + ": '" + item + "' is neither a gid nor a group's name");
    }
    if (comma == std::string::npos) return Status::Ok();
    pos = comma + 1;
  }
}

StatusOr<SluicedArgs> ParseArgs(int argc, char** argv) {
  enum {
    kProducerSocket = kFirstLongOnly,
    kConsumerSocket,
    kSocketMode,
    kProducerSocketMode,
    kConsumerSocketMode,
    kSocketGroup,
    kUidAllowlist,
    kConsumerUidAllowlist,
    kConsumerGidAllowlist,
    kMaxShmSize,
    kMaxBufferSize,
    kForeground,
    kBackground,
    kPerfettoSockets,
    kRelaySocket,
  };
  static const struct option kOptions[] = {
      {"producer-socket", required_argument, nullptr, kProducerSocket},
      {"consumer-socket", required_argument, nullptr, kConsumerSocket},
      {"socket-mode", required_argument, nullptr, kSocketMode},
      {"producer-socket-mode", required_argument, nullptr, kProducerSocketMode},
      {"consumer-socket-mode", required_argument, nullptr, kConsumerSocketMode},
      {"socket-group", required_argument, nullptr, kSocketGroup},
      {"producer-uid-allowlist", required_argument, nullptr, kUidAllowlist},
      {"consumer-uid-allowlist", required_argument, nullptr, kConsumerUidAllowlist},
      {"consumer-gid-allowlist", required_argument, nullptr, kConsumerGidAllowlist},
      {"max-shm-size", required_argument, nullptr, kMaxShmSize},
      {"max-buffer-size", required_argument, nullptr, kMaxBufferSize},
      {"foreground", no_argument, nullptr, kForeground},
      {"background", no_argument, nullptr, kBackground},
      {"perfetto-sockets", no_argument, nullptr, kPerfettoSockets},
      {"relay-socket", required_argument, nullptr, kRelaySocket},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  SluicedArgs a;
  mode_t producer_mode = 0660, consumer_mode = 0660;
  gid_t group = static_cast<gid_t>(-1);
  auto handle = [&](const CommandLineArg& arg) -> Status {
    const std::string v = arg.value ? arg.value : "";
    switch (arg.id) {
      case kProducerSocket: a.ipc.producer_socket_path = v; break;
      case kConsumerSocket: a.ipc.consumer_socket_path = v; break;
      case kSocketMode:
      case kProducerSocketMode:
      case kConsumerSocketMode: {
        mode_t mode = 0;
        if (!ParseMode(arg.value, &mode))
          return Status::Error(arg.name + " takes an octal mode like 0660, not '" + v + "'");
        if (arg.id != kConsumerSocketMode) producer_mode = mode;
        if (arg.id != kProducerSocketMode) consumer_mode = mode;
        break;
      }
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
      case kConsumerUidAllowlist:
        if (!ParseUidList(v, &a.service.consumer_uid_allowlist))
          return Status::Error(arg.name + " takes uids like 0,1000, not '" + v + "'");
        break;
      case kConsumerGidAllowlist:
        SLUICE_RETURN_IF_ERROR(ParseGroupList(arg.name, v, &a.service.consumer_gid_allowlist));
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
      case kBackground: a.foreground = false; break;
      case kPerfettoSockets: {
        const char* producer = getenv("PERFETTO_PRODUCER_SOCK_NAME");
        const char* consumer = getenv("PERFETTO_CONSUMER_SOCK_NAME");
        a.ipc.perfetto_producer_socket_path = producer ? producer : kPerfettoProducerSocket;
        a.ipc.perfetto_consumer_socket_path = consumer ? consumer : kPerfettoConsumerSocket;
        break;
      }
      case kRelaySocket: {
        StatusOr<RelayAddress> addr = ParseRelayAddress(v);
        if (!addr.ok()) return Status::Error(arg.name + ": " + addr.status().message());
        if (addr->kind == RelayAddress::Kind::kDevice)
          return Status::Error(arg.name + " " + v + ": a device is the guest's end; give a socket");
        a.relay = *addr;
        break;
      }
      case 'h': return HelpRequested();
      default: return Status::Error("unexpected argument '" + v + "'");
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(ParseCommandLine(argc, argv, "h", kOptions, handle));
  a.ipc.producer_listen.mode = producer_mode;
  a.ipc.consumer_listen.mode = consumer_mode;
  a.ipc.producer_listen.group = a.ipc.consumer_listen.group = group;
  return a;
}

// Sockets from systemd or Android init replace the paths
// (service/inherited_sockets.h). Returns where they came from, or "".
std::string AdoptInheritedSockets(IpcServerOptions* ipc) {
  StatusOr<InheritedSockets> inherited = FindInheritedSockets(getenv, getpid());
  if (!inherited.ok()) Die(inherited.status().message());
  ClearInheritedSocketsEnv();
  ipc->producer_listen_fd = inherited->producer_fd;
  ipc->consumer_listen_fd = inherited->consumer_fd;
  ipc->perfetto_producer_listen_fd = inherited->perfetto_producer_fd;
  ipc->perfetto_consumer_listen_fd = inherited->perfetto_consumer_fd;
  return inherited->source;
}

// The relay socket from systemd (sluice-relay.socket) stands for
// --relay-socket.
void AdoptInheritedRelaySocket(SluicedArgs* args) {
  StatusOr<InheritedSockets> inherited = FindInheritedSockets(getenv, getpid());
  if (inherited.ok() && inherited->relay_fd >= 0) {
    args->relay_listen_fd = inherited->relay_fd;
    if (!args->relay) args->relay = RelayAddress{};
  }
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
// daemon would hold tens of MiB it no longer uses. malloc_trim (which also
// releases free pages inside the heap) runs when more than kFreeBytesToTrim
// of it is free.
//
// When: a second after the service did work that frees much (a producer or
// consumer gone, a session freed, a read of its buffers:
// TracingService::heap_release_events()), and then once a second while such
// work goes on. Each round the loop wakes for looks at that count (one
// load); no timer is set otherwise. Commits, all an idle recorder's daemon
// sees, free next to nothing: a check a second after each of them was a
// wake-up of its own, 0.15-1.3 ms at rest on this project's machines, of
// which the heap walk (mallinfo2) was ~0.1 ms (docs/PERFORMANCE.md, "Sluice
// at rest"). Lives as long as the loop runs.
class TrimFreeHeap {
 public:
  static constexpr uint32_t kDelayMs = 1000;
  static constexpr size_t kFreeBytesToTrim = 2u << 20;
  TrimFreeHeap(EventLoop* loop, const TracingService* service)
      : loop_(loop), service_(service), alive_(std::make_shared<bool>(true)), seen_(service->heap_release_events()) {
    WatchNextRound();
  }
  ~TrimFreeHeap() { *alive_ = false; }

 private:
  void WatchNextRound() {
    loop_->RunOnNextRound([this, alive = alive_] {
      if (!*alive) return;
      const uint64_t events = service_->heap_release_events();
      // While a check is due, the events since are the check's: it runs
      // after them. Those after it set the next.
      if (events != seen_ && !check_due_) {
        seen_ = events;
        check_due_ = true;
        loop_->PostDelayedTask(
            [this, alive] {
              if (!*alive) return;
              check_due_ = false;
              seen_ = service_->heap_release_events();  // This check runs after them all.
              if (mallinfo2().fordblks > kFreeBytesToTrim) malloc_trim(0);
            },
            kDelayMs);
      }
      WatchNextRound();
    });
  }

  EventLoop* const loop_;
  const TracingService* const service_;
  std::shared_ptr<bool> alive_;
  uint64_t seen_;           // heap_release_events() that a check set or done covers.
  bool check_due_ = false;  // A check is set and has not run yet.
};

// Runs the service until a stop signal on `sfd` ends the loop.
void Serve(const SluicedArgs& args, const std::string& sockets_from, int sfd) {
  EventLoop loop;
  TracingService service(&loop, args.service);
  auto server = IpcServer::Create(&service, args.ipc);
  if (!server.ok()) Die(server.status().message());
  std::unique_ptr<RelayServer> relay;
  if (args.relay) {
    auto r = RelayServer::Create(&service, *args.relay, args.ipc.producer_listen,
                                 args.relay_listen_fd);
    if (!r.ok()) Die(r.status().message());
    relay = std::move(r.value());
  }
  const IpcServerOptions& ipc = args.ipc;
  {
    StopOnSignals stop(&loop, &service, sfd);
    TrimFreeHeap trim(&loop, &service);
    auto where = [&sockets_from](int fd, const std::string& path) {
      return fd >= 0 ? "fd " + std::to_string(fd) + " from " + sockets_from : path;
    };
    std::string listening =
        "listening on " + where(ipc.producer_listen_fd, ipc.producer_socket_path) +
        " (producers) and " + where(ipc.consumer_listen_fd, ipc.consumer_socket_path) +
        " (consumers)";
    if (ipc.perfetto_producer_listen_fd >= 0 || !ipc.perfetto_producer_socket_path.empty())
      listening += ", and where Perfetto's programs look: " +
                   where(ipc.perfetto_producer_listen_fd, ipc.perfetto_producer_socket_path) +
                   " and " + where(ipc.perfetto_consumer_listen_fd, ipc.perfetto_consumer_socket_path);
    if (relay)
      listening += ", relays on " + (args.relay_listen_fd >= 0 ? where(args.relay_listen_fd, "")
                                                               : args.relay->ToString());
    LogLine("sluiced: " + listening);
    // Under systemd (Type=notify) the unit is started from here on; the
    // call does nothing without NOTIFY_SOCKET.
    sd_notifyf(0, "READY=1\nSTATUS=%s", listening.c_str());
    loop.Run();
    sd_notify(0, "STOPPING=1\nSTATUS=stopping");
  }
  relay.reset();  // Relayed producers go as the others do.
  server.value().reset();  // Connections first: producers disconnect, SMBs scraped.
}

int Main(int argc, char** argv) {
  RetainFreedHeap();  // Before any thread starts.
  RaiseOpenFilesLimit();  // An fd per producer and consumer connection.
  auto args = ParseArgs(argc, argv);
  if (!args.ok()) return CommandLineExit(args.status(), "sluiced", kUsage);
  g_foreground = args->foreground;
  AdoptInheritedRelaySocket(&*args);  // Before AdoptInheritedSockets clears the variables.
  const std::string sockets_from = AdoptInheritedSockets(&args->ipc);
  if (!g_foreground) {
    openlog("sluiced", LOG_PID, LOG_DAEMON);
    if (daemon(0, 0) != 0) Die(std::string("daemon() failed: ") + strerror(errno));
  }
  args->service.log = [](const std::string& line) { LogLine(line); };
  // libprotobuf logs (e.g. invalid UTF-8 in a string field) for input a peer
  // controls: a producer could flood our log. Its errors are already handled
  // (the message is dropped or its field ignored), so silence them.
  google::protobuf::SetLogHandler(nullptr);
  int sfd = OpenStopSignalFd();
  // The directories sluiced creates for its sockets, removed at exit if
  // empty: a /run/perfetto left behind would send upstream's clients there
  // after sluiced is gone.
  std::vector<std::string> created_dirs;
  for (const std::string* path : {&args->ipc.producer_socket_path, &args->ipc.consumer_socket_path,
                                  &args->ipc.perfetto_producer_socket_path,
                                  &args->ipc.perfetto_consumer_socket_path}) {
    const std::string dir = path->substr(0, path->rfind('/'));
    if (!path->empty() && path->find('/') != std::string::npos && !dir.empty() &&
        access(dir.c_str(), F_OK) != 0)
      created_dirs.push_back(dir);
  }
  Serve(*args, sockets_from, sfd);
  close(sfd);
  if (args->ipc.producer_listen_fd < 0) unlink(args->ipc.producer_socket_path.c_str());
  if (args->ipc.consumer_listen_fd < 0) unlink(args->ipc.consumer_socket_path.c_str());
  if (args->ipc.perfetto_producer_listen_fd < 0 && !args->ipc.perfetto_producer_socket_path.empty())
    unlink(args->ipc.perfetto_producer_socket_path.c_str());
  if (args->ipc.perfetto_consumer_listen_fd < 0 && !args->ipc.perfetto_consumer_socket_path.empty())
    unlink(args->ipc.perfetto_consumer_socket_path.c_str());
  if (args->relay && args->relay_listen_fd < 0 && args->relay->kind == RelayAddress::Kind::kUnix)
    unlink(args->relay->path.c_str());
  for (const std::string& dir : created_dirs) rmdir(dir.c_str());
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
