// sluice-probes: the producer daemon hosting sluice's kernel data sources
// (linux.ftrace, linux.bpf, linux.process_stats, linux.system_info). It
// connects to sluiced's producer socket and reconnects when sluiced restarts.
//
// tracefs after a crash: the ftrace sources keep what they changed in state
// files under --state-dir (user/probes/tracefs_state_file.h). At startup,
// before it connects, sluice-probes puts back what a dead owner (a killed
// sluice-probes or `sluice record`) left there; `--cleanup` does only that and
// exits (the systemd unit runs it as ExecStopPost). When sluiced goes away,
// the running sources restore tracefs at once (ProbesProducer::OnDisconnect).
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "service/ipc/producer_ipc_client.h"
#include "shm/base/command_line.h"
#include "shm/base/heap_retention.h"
#include "shm/base/open_files_limit.h"
#include "shm/base/journal_stream.h"
#include "shm/base/units.h"  // SLUICE_SIZE_HELP
#include "shm/base/wake_fd.h"
#include "user/probes/probes_producer.h"
#include "user/probes/tracefs_cleanup.h"

namespace {

constexpr char kUsage[] =
    "usage: sluice-probes [--producer-socket PATH] [--smb SIZE] [--once] [--state-dir DIR]\n"
    "       sluice-probes --cleanup [--state-dir DIR]\n"
    "  --producer-socket PATH  sluiced's producer socket (default /run/sluice/producer.sock)\n"
    "  --smb SIZE              shared memory to ask for (default 8mb, at most 1gb)\n"
    "  --once                  exit when sluiced goes away instead of reconnecting\n"
    "  --state-dir DIR         where the tracefs changes are kept until undone, so that\n"
    "                          a killed sluice-probes or sluice record can be cleaned up\n"
    "                          after (default /run/sluice/tracefs-state)\n"
    "  --cleanup               put back what dead owners left changed in tracefs, then\n"
    "                          exit (1 if something could not be put back)\n"
    "  -h, --help              this text\n"
    SLUICE_SIZE_HELP;

struct Args {
  std::string socket_path = "/run/sluice/producer.sock";
  uint32_t smb_kb = sluice::kDefaultProbesSmbKb;
  bool once = false;
  std::string state_dir = sluice::kDefaultTracefsStateDir;
  bool cleanup = false;
};

sluice::StatusOr<Args> ParseArgs(int argc, char** argv) {
  enum { kProducerSocket = sluice::kFirstLongOnly, kSmb, kOnce, kStateDir, kCleanup };
  static const struct option kOptions[] = {
      {"producer-socket", required_argument, nullptr, kProducerSocket},
      {"smb", required_argument, nullptr, kSmb},
      {"once", no_argument, nullptr, kOnce},
      {"state-dir", required_argument, nullptr, kStateDir},
      {"cleanup", no_argument, nullptr, kCleanup},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  Args a;
  sluice::Status parsed = sluice::ParseCommandLine(
      argc, argv, "h", kOptions, [&](const sluice::CommandLineArg& arg) -> sluice::Status {
        switch (arg.id) {
          case kProducerSocket: a.socket_path = arg.value; break;
          case kSmb: {
            auto kb = sluice::ParseProbesSmbKb(arg.value);
            if (!kb.ok()) return sluice::Status::Error(arg.name + ": " + kb.status().message());
            a.smb_kb = *kb;
            break;
          }
          case kOnce: a.once = true; break;
          case kStateDir:
            if (arg.value[0] != '/')
              return sluice::Status::Error(arg.name + ": '" + arg.value +
                                           "' is not an absolute path");
            a.state_dir = arg.value;
            break;
          case kCleanup: a.cleanup = true; break;
          case 'h': return sluice::HelpRequested();
          default: return sluice::Status::Error(std::string("unexpected argument '") + arg.value + "'");
        }
        return sluice::Status::Ok();
      });
  if (!parsed.ok()) return parsed;
  return a;
}

std::atomic<bool> g_stop{false};
// Wakes the main thread for a stop signal or a lost connection, which it
// waits for without a timeout (at rest it costs nothing). Set once, before
// the signal handlers.
const sluice::WakeFd* g_wake = nullptr;
void WakeMain() {
  if (g_wake) g_wake->Wake();
}
void OnSignal(int) {
  g_stop.store(true);
  WakeMain();
}
// Up to `timeout_ms` (-1: no limit), or until WakeMain(); without the
// eventfd, at most 100 ms.
void WaitForWake(int timeout_ms) {
  if (g_wake) {
    g_wake->Wait(timeout_ms);
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms < 0 ? 100 : std::min(timeout_ms, 100)));
  }
}

// Forwards OnDisconnect to the main loop so it can reconnect.
class ReconnectingProbes : public sluice::ProbesProducer {
 public:
  using ProbesProducer::ProbesProducer;
  void OnDisconnect(const std::string& reason) override {
    ProbesProducer::OnDisconnect(reason);
    disconnected_.store(true);
    WakeMain();
  }
  std::atomic<bool> disconnected_{false};
};

// One line on stderr; under systemd the "<N>" prefix gives the journal its
// priority (shm/base/journal_stream.h), so errors show in journalctl -p err.
void Log(int priority, const std::string& line) {
  fprintf(stderr, "%ssluice-probes: %s\n", sluice::StderrPriorityPrefix(priority).c_str(),
          line.c_str());
}

// Puts back what dead owners left changed in tracefs; one line each on stderr
// (with `verbose`, also the owners still running). True if nothing failed.
bool RestoreTracefs(const std::string& state_dir, bool verbose) {
  sluice::TracefsCleanupReport report = sluice::RestoreTracefsLeftByDeadOwners(state_dir);
  for (const std::string& line : report.restored) Log(LOG_NOTICE, line);
  for (const std::string& line : report.deferred) Log(LOG_WARNING, line);
  for (const std::string& line : report.errors) Log(LOG_ERR, line);
  if (verbose) {
    for (const std::string& line : report.running) Log(LOG_INFO, line);
  }
  return report.ok();
}

}  // namespace

int main(int argc, char** argv) {
  sluice::RetainFreedHeap();  // Before any thread starts.
  sluice::RaiseOpenFilesLimit();  // Four fds per CPU: past 1024 on a 256-CPU server.
  auto args = ParseArgs(argc, argv);
  if (!args.ok()) return sluice::CommandLineExit(args.status(), "sluice-probes", kUsage);
  if (args->cleanup) return RestoreTracefs(args->state_dir, /*verbose=*/true) ? 0 : 1;
  // Before anything else, so it happens even while sluiced is down; each
  // later connection does it again (ProbesProducer::Connect).
  RestoreTracefs(args->state_dir, /*verbose=*/false);
  bool just_restored = true;
  const std::string& socket_path = args->socket_path;
  const bool once = args->once;
  static const sluice::WakeFd wake = sluice::WakeFd::Create().value_or(sluice::WakeFd());
  if (wake.fd() >= 0) g_wake = &wake;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  int backoff_ms = 100;
  bool said_waiting = false;
  while (!g_stop.load()) {
    sluice::ProbesProducerOptions options;
    options.tracefs_state_dir = args->state_dir;
    options.restore_tracefs_on_connect = !just_restored;
    just_restored = false;
    ReconnectingProbes probes(options);
    auto client = sluice::ProducerIpcClient::Connect(socket_path, &probes,
                                                     sluice::ProbesConnectionOptions(args->smb_kb));
    if (!client.ok()) {
      if (once) {
        Log(LOG_ERR, client.status().message());
        return 1;
      }
      if (!said_waiting) {
        Log(LOG_WARNING, "waiting for sluiced: " + client.status().message());
        said_waiting = true;
      }
      WaitForWake(backoff_ms);
      backoff_ms = std::min(backoff_ms * 2, 2000);
      continue;
    }
    Log(LOG_INFO, "connected to " + socket_path);
    said_waiting = false;
    backoff_ms = 100;
    probes.Connect(client->get());
    while (!g_stop.load() && !probes.disconnected_.load()) WaitForWake(-1);
    probes.Disconnect();
    client->reset();
    if (once) break;
  }
  return 0;
}
