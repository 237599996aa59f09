#include "user/cmd/trigger_command.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "service/ipc/producer_ipc_client.h"
#include "shm/base/command_line.h"

namespace sluice {
namespace {

constexpr char kUsage[] =
    "usage: sluice trigger NAME... [--producer-name NAME] [--producer-socket PATH]\n"
    "  fires the triggers NAME... (Perfetto's trigger_perfetto): every session in\n"
    "  sluiced whose config's trigger_config lists one of them acts on it: a\n"
    "  START_TRACING session starts, a STOP_TRACING one stops after the trigger's\n"
    "  stop_delay_ms, a CLONE_SNAPSHOT one is snapshotted. The trace records each\n"
    "  trigger a session acted on (Perfetto's trigger packets).\n"
    "  --producer-name NAME    the producer name sluiced sees, matched by a\n"
    "                          trigger's producer_name_regex (default sluice-trigger)\n"
    "  --producer-socket PATH  sluiced's producer socket (default /run/sluice/producer.sock)\n"
    "Exit status: 0 sent and answered (it prints how many sessions acted on the\n"
    "triggers, 0 included); 1 sluiced could not be reached or did not answer;\n"
    "2 bad usage.\n";

constexpr uint32_t kAnswerTimeoutMs = 30000;

// The producer side of the connection: it runs no data source, it only
// waits for the answer to ActivateTriggers.
class TriggerProducer : public ProducerWithoutDataSources {
 public:
  void OnDisconnect(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    disconnect_reason_ = reason.empty() ? "the connection closed" : reason;
    cv_.notify_all();
  }
  void OnTriggersActivated(uint32_t sessions_triggered) override {
    std::lock_guard<std::mutex> lock(mu_);
    answered_ = true;
    sessions_triggered_ = sessions_triggered;
    cv_.notify_all();
  }

  // The number of sessions that acted, or the reason there is no answer.
  StatusOr<uint32_t> WaitForAnswer() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(kAnswerTimeoutMs),
                 [this] { return answered_ || !disconnect_reason_.empty(); });
    if (answered_) return sessions_triggered_;
    if (!disconnect_reason_.empty())
      return Status::Error("sluiced dropped the connection before it answered: " + disconnect_reason_);
    return Status::Error("sluiced did not answer within " + std::to_string(kAnswerTimeoutMs / 1000) +
                         " s (is it overloaded?)");
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool answered_ = false;
  uint32_t sessions_triggered_ = 0;
  std::string disconnect_reason_;
};

}  // namespace

int RunTriggerCommand(int argc, char** argv) {
  enum { kProducerName = kFirstLongOnly, kProducerSocket };
  static const struct option kOptions[] = {{"help", no_argument, nullptr, 'h'},
                                           {"producer-name", required_argument, nullptr, kProducerName},
                                           {"producer-socket", required_argument, nullptr, kProducerSocket},
                                           {nullptr, 0, nullptr, 0}};
  std::string socket = "/run/sluice/producer.sock";
  ProducerOptions options;
  options.name = "sluice-trigger";
  // The smallest SMB sluiced gives: this producer writes nothing.
  options.shm_size_hint_bytes = 1;
  std::vector<std::string> names;
  Status parsed = ParseCommandLine(argc, argv, "h", kOptions, [&](const CommandLineArg& arg) {
    switch (arg.id) {
      case 'h': return HelpRequested();
      case kProducerName:
        if (*arg.value == 0) return Status::Error("--producer-name needs a name");
        options.name = arg.value;
        return Status::Ok();
      case kProducerSocket: socket = arg.value; return Status::Ok();
      case kOperand:
        if (*arg.value == 0) return Status::Error("a trigger name is empty");
        names.push_back(arg.value);
        return Status::Ok();
    }
    return Status::Error("unexpected argument");
  });
  if (parsed.ok() && names.empty()) parsed = Status::Error("no trigger NAME given");
  if (!parsed.ok()) return CommandLineExit(parsed, "sluice trigger", kUsage);

  TriggerProducer producer;
  auto client = ProducerIpcClient::Connect(socket, &producer, options);
  if (!client.ok()) {
    fprintf(stderr, "sluice trigger: %s\n", client.status().message().c_str());
    return 1;
  }
  (*client)->ActivateTriggers(names);
  StatusOr<uint32_t> sessions = producer.WaitForAnswer();
  client->reset();
  if (!sessions.ok()) {
    fprintf(stderr, "sluice trigger: %s\n", sessions.status().message().c_str());
    return 1;
  }
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  if (*sessions == 0) {
    printf("sluice trigger: no session acted on %s (none lists it in its trigger_config, or its "
           "max_per_24_h / skip_probability / producer_name_regex passed it over)\n",
           list.c_str());
  } else {
    printf("sluice trigger: %s: %u session%s acted on it\n", list.c_str(), *sessions,
           *sessions == 1 ? "" : "s");
  }
  return 0;
}

}  // namespace sluice
