// sluice-relay: the guest's end of a relay (docs/RELAY.md). It takes the
// guest's producers on the usual producer socket and moves what they record
// to a host's sluiced (`sluiced --relay-socket`), which records this machine
// beside its own: service/relay/relay_producer_host.h.
//
// Why a binary of its own rather than a mode of sluice-probes: it must take
// every producer of the guest (sluice-probes, SDK apps, `perfetto`'s
// producers), start before them and outlive them, and it needs no tracefs
// and no privilege beyond its socket: sluice-probes stays the only program
// that touches the kernel, as on the host.
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_server.h"
#include "service/relay/relay_producer_host.h"
#include "shm/base/command_line.h"
#include "shm/base/string_util.h"
#include "shm/base/units.h"

namespace sluice {
namespace {

constexpr char kUsage[] = R"(usage: sluice-relay --to ADDR [options]

Relays this machine's producers (sluice-probes, apps) to a host's sluiced,
which records them with its own sessions as a machine of their own: one
trace of a QEMU guest and its host, on the host's clock.

  --to ADDR                  the host: virtio:NAME (/dev/virtio-ports/NAME,
                             a virtio-serial port), /dev/DEVICE,
                             vsock:CID:PORT (CID 2 is the host),
                             unix:PATH or tcp:HOST:PORT
  --producer-socket PATH     where this machine's producers connect (default
                             /run/sluice/producer.sock: where they look for
                             sluiced)
  --socket-mode MODE         octal permissions of the producer socket
                             (default 0660)
  --machine-name NAME        the machine's name in the trace (default: the
                             hostname); a relay that comes back under the
                             same name is the same machine
  --buffer-size SIZE         chunks queued for the link at most (default
                             8mb); past it whole chunks are dropped and
                             counted in the trace
  --max-rate SIZE            at most this many bytes a second on the link
                             (default: no cap)
  --clock-sync-period MS     a clock sync burst every MS (default 30000)
  -h, --help                 this text
)" SLUICE_SIZE_HELP;

struct RelayArgs {
  RelayOptions relay;
  IpcServerOptions ipc;
  bool has_to = false;
};

bool ParseMode(const std::string& s, mode_t* mode) {
  if (s.empty() || s.size() > 4) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '7') return false;
    v = v * 8 + static_cast<unsigned>(c - '0');
  }
  *mode = static_cast<mode_t>(v);
  return v <= 0777;
}

StatusOr<RelayArgs> ParseArgs(int argc, char** argv) {
  enum {
    kTo = kFirstLongOnly,
    kProducerSocket,
    kSocketMode,
    kMachineName,
    kBufferSize,
    kMaxRate,
    kClockSyncPeriod,
  };
  static const struct option kOptions[] = {
      {"to", required_argument, nullptr, kTo},
      {"producer-socket", required_argument, nullptr, kProducerSocket},
      {"socket-mode", required_argument, nullptr, kSocketMode},
      {"machine-name", required_argument, nullptr, kMachineName},
      {"buffer-size", required_argument, nullptr, kBufferSize},
      {"max-rate", required_argument, nullptr, kMaxRate},
      {"clock-sync-period", required_argument, nullptr, kClockSyncPeriod},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  RelayArgs a;
  a.ipc.consumer_socket_path.clear();
  auto handle = [&](const CommandLineArg& arg) -> Status {
    const std::string v = arg.value ? arg.value : "";
    switch (arg.id) {
      case kTo: {
        StatusOr<RelayAddress> addr = ParseRelayAddress(v);
        if (!addr.ok()) return Status::Error(arg.name + ": " + addr.status().message());
        a.relay.to = *addr;
        a.has_to = true;
        break;
      }
      case kProducerSocket: a.ipc.producer_socket_path = v; break;
      case kSocketMode:
        if (!ParseMode(v, &a.ipc.producer_listen.mode))
          return Status::Error(arg.name + " takes an octal mode like 0660, not '" + v + "'");
        break;
      case kMachineName: a.relay.machine_name = v; break;
      case kBufferSize:
      case kMaxRate: {
        StatusOr<uint64_t> kb = ParseSizeKb(v);
        if (!kb.ok()) return Status::Error(arg.name + ": " + kb.status().message());
        if (arg.id == kBufferSize) {
          if (*kb < 64 || *kb > (1u << 20)) return Status::Error(arg.name + " " + v + " is out of range (64kb..1gb)");
          a.relay.buffer_bytes = static_cast<size_t>(*kb * 1024);
        } else {
          if (*kb < 4) return Status::Error(arg.name + " " + v + " is below 4kb a second");
          a.relay.max_bytes_per_second = *kb * 1024;
        }
        break;
      }
      case kClockSyncPeriod: {
        uint32_t ms = 0;
        if (!ParseU32(v, &ms) || ms < 1000)
          return Status::Error(arg.name + " takes milliseconds, at least 1000, not '" + v + "'");
        a.relay.clock_sync_period_ms = ms;
        break;
      }
      case 'h': return HelpRequested();
      default: return Status::Error("unexpected argument '" + v + "'");
    }
    return Status::Ok();
  };
  SLUICE_RETURN_IF_ERROR(ParseCommandLine(argc, argv, "h", kOptions, handle));
  if (!a.has_to) return Status::Error("--to ADDR is needed: where the host's sluiced listens");
  return a;
}

int Main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv);
  if (!args.ok()) return CommandLineExit(args.status(), "sluice-relay", kUsage);
  google::protobuf::SetLogHandler(nullptr);  // A peer controls what it would log.
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    fprintf(stderr, "sluice-relay: signalfd: %s\n", strerror(errno));
    return 1;
  }
  args->relay.log = [](const std::string& line) { fprintf(stderr, "%s\n", line.c_str()); };
  EventLoop loop;
  RelayProducerHost host(&loop, args->relay);
  auto server = IpcServer::CreateForProducers(&host, args->ipc);
  if (!server.ok()) {
    fprintf(stderr, "sluice-relay: %s\n", server.status().message().c_str());
    return 1;
  }
  fprintf(stderr, "sluice-relay: producers on %s, relaying to %s\n",
          args->ipc.producer_socket_path.c_str(), args->relay.to.ToString().c_str());
  loop.AddFdWatch(sfd, EPOLLIN, [&loop, sfd](uint32_t) {
    signalfd_siginfo info;
    if (read(sfd, &info, sizeof(info)) == sizeof(info)) loop.Quit();
  });
  loop.PostTask([&host] { host.Start(); });
  loop.Run();
  loop.RemoveFdWatch(sfd);
  server.value().reset();  // Producers go first: their last chunks are sent if the link takes them.
  // What was queued for the link: a moment to go out.
  const RelayProducerHost::Totals& t = host.totals();
  fprintf(stderr,
          "sluice-relay: forwarded %llu chunks (%llu bytes); dropped %llu chunks, %llu packets, "
          "%llu bytes; %llu links, %llu clock rounds\n",
          static_cast<unsigned long long>(t.chunks_forwarded),
          static_cast<unsigned long long>(t.bytes_forwarded),
          static_cast<unsigned long long>(t.chunks_dropped),
          static_cast<unsigned long long>(t.packets_dropped),
          static_cast<unsigned long long>(t.bytes_dropped),
          static_cast<unsigned long long>(t.links), static_cast<unsigned long long>(t.clock_rounds));
  unlink(args->ipc.producer_socket_path.c_str());
  close(sfd);
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
