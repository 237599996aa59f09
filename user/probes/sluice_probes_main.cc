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
#include "user/probes/probes_producer.h"

namespace {

constexpr char kUsage[] =
    "usage: sluice-probes [--producer-socket PATH] [--smb SIZE_KB] [--once]\n"
    "  --producer-socket PATH  sluiced's producer socket (default /run/sluice/producer.sock)\n"
    "  --smb SIZE_KB           shared memory to ask for (default 8192)\n"
    "  --once                  exit when sluiced goes away instead of reconnecting\n";

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
  std::string socket_path = "/run/sluice/producer.sock";
  uint32_t smb_kb = 8192;
  bool once = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--producer-socket" && i + 1 < argc) {
      socket_path = argv[++i];
    } else if (a == "--smb" && i + 1 < argc) {
      smb_kb = static_cast<uint32_t>(strtoul(argv[++i], nullptr, 10));
    } else if (a == "--once") {
      once = true;
    } else if (a == "-h" || a == "--help") {
      fputs(kUsage, stdout);
      return 0;
    } else {
      fprintf(stderr, "sluice-probes: unknown argument %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
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
    sluice::ProducerOptions producer;
    producer.name = "sluice-probes";
    producer.shm_size_hint_bytes = smb_kb * 1024;
    producer.shm_page_size_hint_bytes = 32 * 1024;
    auto client = sluice::ProducerIpcClient::Connect(socket_path, &probes, producer);
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
