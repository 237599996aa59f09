// sluice-probes: the producer daemon hosting sluice's kernel data sources
// (linux.ftrace, linux.bpf, linux.process_stats, linux.system_info). It
// connects to sluiced's producer socket and reconnects when sluiced restarts.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "service/ipc/producer_ipc_client.h"
#include "shm/base/command_line.h"
#include "shm/base/units.h"  // SLUICE_SIZE_HELP
#include "user/probes/probes_producer.h"

namespace {

constexpr char kUsage[] =
    "usage: sluice-probes [--producer-socket PATH] [--smb SIZE] [--once]\n"
    "  --producer-socket PATH  sluiced's producer socket (default /run/sluice/producer.sock)\n"
    "  --smb SIZE              shared memory to ask for (default 8mb, at most 1gb)\n"
    "  --once                  exit when sluiced goes away instead of reconnecting\n"
    "  -h, --help              this text\n"
    SLUICE_SIZE_HELP;

struct Args {
  std::string socket_path = "/run/sluice/producer.sock";
  uint32_t smb_kb = sluice::kDefaultProbesSmbKb;
  bool once = false;
};

sluice::StatusOr<Args> ParseArgs(int argc, char** argv) {
  enum { kProducerSocket = sluice::kFirstLongOnly, kSmb, kOnce };
  static const struct option kOptions[] = {
      {"producer-socket", required_argument, nullptr, kProducerSocket},
      {"smb", required_argument, nullptr, kSmb},
      {"once", no_argument, nullptr, kOnce},
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
          case 'h': return sluice::HelpRequested();
          default: return sluice::Status::Error(std::string("unexpected argument '") + arg.value + "'");
        }
        return sluice::Status::Ok();
      });
  if (!parsed.ok()) return parsed;
  return a;
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// Forwards OnDisconnect to the main loop so it can reconnect.
class ReconnectingProbes : public sluice::ProbesProducer {
 public:
  using ProbesProducer::ProbesProducer;
  void OnDisconnect(const std::string& reason) override {
    ProbesProducer::OnDisconnect(reason);
    disconnected_.store(true);
  }
  std::atomic<bool> disconnected_{false};
};

}  // namespace

int main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv);
  if (!args.ok()) return sluice::CommandLineExit(args.status(), "sluice-probes", kUsage);
  const std::string& socket_path = args->socket_path;
  const bool once = args->once;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  int backoff_ms = 100;
  bool said_waiting = false;
  while (!g_stop.load()) {
    sluice::ProbesProducerOptions options;
    ReconnectingProbes probes(options);
    auto client = sluice::ProducerIpcClient::Connect(socket_path, &probes,
                                                     sluice::ProbesConnectionOptions(args->smb_kb));
    if (!client.ok()) {
      if (once) {
        fprintf(stderr, "sluice-probes: %s (is sluiced running?)\n",
                client.status().message().c_str());
        return 1;
      }
      if (!said_waiting) {
        fprintf(stderr, "sluice-probes: waiting for sluiced: %s\n", client.status().message().c_str());
        said_waiting = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms = std::min(backoff_ms * 2, 2000);
      continue;
    }
    fprintf(stderr, "sluice-probes: connected to %s\n", socket_path.c_str());
    said_waiting = false;
    backoff_ms = 100;
    probes.Connect(client->get());
    while (!g_stop.load() && !probes.disconnected_.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    probes.Disconnect();
    client->reset();
    if (once) break;
  }
  return 0;
}
