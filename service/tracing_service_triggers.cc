// TracingService: triggers (TraceConfig.trigger_config), as Perfetto's
// traced acts on them. A producer fires trigger names
// (ProducerEndpoint::ActivateTriggers: `sluice trigger NAME...`); each
// session whose config lists one of them, from a producer whose name matches
// the trigger's producer_name_regex, acts on it by its trigger_mode:
//
//   START_TRACING   EnableTracing sets the session up but starts nothing;
//                   the first trigger starts it (duration_ms then counts from
//                   there). No trigger within trigger_timeout_ms: the session
//                   ends with nothing recorded.
//   STOP_TRACING    the session records from the start (usually into a ring
//                   buffer) and stops stop_delay_ms after the first trigger.
//                   No trigger within trigger_timeout_ms: it ends and its data
//                   is not written (readers get nothing while it waits).
//   CLONE_SNAPSHOT  every trigger makes the consumer snapshot the running
//                   session (Consumer::OnCloneTriggerHit, stop_delay_ms
//                   later); the session ends at trigger_timeout_ms.
//
// Every trigger a session acted on is written into its trace (and into its
// clones') as a Trigger packet, timestamped when it arrived.
// max_per_24_h and skip_probability limit how often a trigger acts.
#include <algorithm>
#include <random>
#include <set>

#include "service/regex_match.h"
#include "service/service_packets.h"
#include "service/tracing_service.h"
#include "shm/base/clock.h"

namespace sluice {
namespace {

using TriggerConfig = perfetto::protos::TraceConfig::TriggerConfig;

constexpr uint32_t kMaxTriggerTimeoutMs = 7u * 24 * 3600 * 1000;  // A week.
constexpr uint64_t kDayNs = 24ull * 3600 * 1000 * 1000 * 1000;

// use_clone_snapshot_if_available turns STOP_TRACING into CLONE_SNAPSHOT
// where the service can clone, as sluiced always can.
TriggerConfig::TriggerMode EffectiveTriggerMode(const perfetto::protos::TraceConfig& config) {
  const TriggerConfig& tc = config.trigger_config();
  if (tc.trigger_mode() == TriggerConfig::STOP_TRACING && tc.use_clone_snapshot_if_available())
    return TriggerConfig::CLONE_SNAPSHOT;
  return tc.trigger_mode();
}

std::string TriggerNames(const TriggerConfig& tc) {
  std::string names;
  for (const auto& t : tc.triggers()) names += (names.empty() ? "" : ", ") + t.name();
  return names;
}

}  // namespace

Status TracingService::CheckTriggerConfigLocked(const perfetto::protos::TraceConfig& config) const {
  if (!config.has_trigger_config()) return Status::Ok();
  const TriggerConfig& tc = config.trigger_config();
  if (tc.triggers_size() == 0)
    return Status::Error("trigger_config has no triggers {}: add one (triggers { name: \"...\" }) "
                         "or drop trigger_config");
  if (tc.trigger_mode() != TriggerConfig::START_TRACING &&
      tc.trigger_mode() != TriggerConfig::STOP_TRACING &&
      tc.trigger_mode() != TriggerConfig::CLONE_SNAPSHOT)
    return Status::Error("trigger_config needs trigger_mode: START_TRACING, STOP_TRACING or "
                         "CLONE_SNAPSHOT");
  if (tc.trigger_timeout_ms() == 0)
    return Status::Error("trigger_config needs trigger_timeout_ms: how long the session waits "
                         "for a trigger, in ms");
  if (tc.trigger_timeout_ms() > kMaxTriggerTimeoutMs)
    return Status::Error("trigger_timeout_ms " + std::to_string(tc.trigger_timeout_ms()) +
                         " is more than a week (" + std::to_string(kMaxTriggerTimeoutMs) +
                         " ms), the most sluiced waits; lower it");
  if (tc.trigger_mode() == TriggerConfig::START_TRACING && config.deferred_start())
    return Status::Error("deferred_start and trigger_mode START_TRACING both hold back the start; "
                         "drop deferred_start (the trigger starts the session)");
  for (const auto& t : tc.triggers()) {
    if (t.name().empty()) return Status::Error("a trigger_config trigger has no name; give it one");
    if (!t.producer_name_regex().empty()) {
      bool valid = false;
      RegexFullMatch(t.producer_name_regex(), "", &valid);
      if (!valid)
        return Status::Error("trigger '" + t.name() + "': producer_name_regex '" +
                             t.producer_name_regex() + "' is not a valid (POSIX extended) regex");
    }
    if (t.skip_probability() < 0 || t.skip_probability() > 1)
      return Status::Error("trigger '" + t.name() + "': skip_probability must be within [0, 1]");
  }
  return Status::Ok();
}

void TracingService::ArmTriggerTimeoutLocked(TracingSession* s) {
  const TracingSessionId sid = s->id;
  PostDelayedTask(
      [this, sid] {
        ServiceLock lock(this);
        TracingSession* session = FindSessionLocked(sid);
        if (!session || session->state == SessionState::kStopping ||
            session->state == SessionState::kDisabled)
          return;
        const TriggerConfig& tc = session->config.trigger_config();
        const auto mode = EffectiveTriggerMode(session->config);
        if (mode == TriggerConfig::START_TRACING && session->state != SessionState::kConfigured)
          return;  // Started by a trigger: duration_ms (or a stop) ends it.
        if (mode == TriggerConfig::STOP_TRACING && session->trigger_stop_scheduled) return;
        std::string error;
        if (WaitingForTriggerLocked(session))
          error = std::string(kNoTriggerError) + ": none of the session's triggers (" +
                  TriggerNames(tc) + ") fired within trigger_timeout_ms (" +
                  std::to_string(tc.trigger_timeout_ms()) + " ms); nothing was recorded";
        Log("sluiced: session " + std::to_string(sid) + " reached trigger_timeout_ms");
        DisableTracingLocked(session, error);
      },
      s->config.trigger_config().trigger_timeout_ms());
}

bool TracingService::WaitingForTriggerLocked(const TracingSession* s) const {
  if (!s->config.has_trigger_config() || s->cloned_from != 0) return false;
  const auto mode = EffectiveTriggerMode(s->config);
  return (mode == TriggerConfig::START_TRACING || mode == TriggerConfig::STOP_TRACING) &&
         s->received_triggers.empty();
}

std::string TracingService::DescribeTriggersLocked(const TracingSession* s) const {
  if (!s->config.has_trigger_config()) return "";
  const TriggerConfig& tc = s->config.trigger_config();
  const std::string mode = TriggerConfig::TriggerMode_Name(EffectiveTriggerMode(s->config));
  if (s->received_triggers.empty())
    return "waiting for a " + mode + " trigger (" + TriggerNames(tc) + ") for up to " +
           std::to_string(tc.trigger_timeout_ms()) + " ms from its start";
  std::string names;
  for (const ReceivedTrigger& t : s->received_triggers)
    names += (names.empty() ? "'" : ", '") + t.name + "' from " + t.producer_name;
  return mode + ": " + std::to_string(s->received_triggers.size()) + " received (" + names + ")";
}

void TracingService::EmitTriggerPacketsLocked(TracingSession* s, std::vector<std::string>* out) {
  for (; s->triggers_emitted < s->received_triggers.size(); s->triggers_emitted++) {
    const ReceivedTrigger& t = s->received_triggers[s->triggers_emitted];
    out->push_back(MakeTriggerPacket(t.name, t.producer_name, static_cast<int32_t>(t.producer_uid),
                                     t.boot_ns));
  }
}

bool TracingService::TriggerAllowedLocked(const TriggerConfig::Trigger& t, uint64_t now_ns) {
  if (t.max_per_24_h() > 0) {
    std::vector<uint64_t>& history = trigger_history_[t.name()];
    std::erase_if(history, [now_ns](uint64_t at) { return at + kDayNs <= now_ns; });
    if (history.size() >= t.max_per_24_h()) return false;
  }
  if (t.skip_probability() > 0) {
    // Off every hot path: one draw per trigger a session is configured for.
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    if (std::uniform_real_distribution<double>(0, 1)(rng) < t.skip_probability()) return false;
  }
  return true;
}

void TracingService::ActivateTriggers(ProducerId producer, const std::vector<std::string>& names) {
  ServiceLock lock(this);
  ConnectedProducer* p = FindProducerLocked(producer);
  if (!p || p->kicked) return;
  const uint64_t now = BootTimeNs();
  uint32_t sessions_triggered = 0;
  std::set<std::string> counted;  // max_per_24_h counts a name once per call.
  for (auto& [sid, session] : sessions_) {
    TracingSession* s = session.get();
    if (!s->config.has_trigger_config() || s->cloned_from != 0) continue;
    if (s->state != SessionState::kConfigured && s->state != SessionState::kStarted) continue;
    const auto mode = EffectiveTriggerMode(s->config);
    bool acted = false;
    for (const auto& t : s->config.trigger_config().triggers()) {
      if (std::find(names.begin(), names.end(), t.name()) == names.end()) continue;
      if (!t.producer_name_regex().empty() && !RegexFullMatch(t.producer_name_regex(), p->name))
        continue;
      if (!TriggerAllowedLocked(t, now)) continue;
      if (t.max_per_24_h() > 0 && counted.insert(t.name()).second)
        trigger_history_[t.name()].push_back(now);
      s->received_triggers.push_back(ReceivedTrigger{t.name(), p->name, p->uid, now});
      acted = true;
      Log("sluiced: session " + std::to_string(sid) + ": trigger '" + t.name() + "' from '" +
          p->name + "'");
      if (mode == TriggerConfig::START_TRACING) {
        if (s->state == SessionState::kConfigured) (void)StartTracingLocked(s);
      } else if (mode == TriggerConfig::STOP_TRACING) {
        if (s->state != SessionState::kStarted || s->trigger_stop_scheduled) continue;
        s->trigger_stop_scheduled = true;
        PostDelayedTask(
            [this, sid = sid] {
              ServiceLock lock(this);
              if (TracingSession* stopping = FindSessionLocked(sid)) DisableTracingLocked(stopping, "");
            },
            t.stop_delay_ms());
      } else if (s->consumer == 0) {
        Log("sluiced: session " + std::to_string(sid) + " has no consumer to take the snapshot "
            "trigger '" + t.name() + "' asks for (it is detached): not taken");
      } else {
        PostDelayedTask(
            [this, sid = sid, name = t.name()] {
              Consumer* observer = nullptr;
              {
                ServiceLock lock(this);
                TracingSession* target = FindSessionLocked(sid);
                if (!target || target->state != SessionState::kStarted) return;
                auto it = consumers_.find(target->consumer);
                if (it == consumers_.end()) return;
                observer = it->second;
              }
              // Like NotifyConsumerLocked's call: no lock held, and
              // RemoveConsumer waits for a running task before it returns.
              observer->OnCloneTriggerHit(name);
            },
            t.stop_delay_ms());
      }
    }
    if (acted) sessions_triggered++;
  }
  PostProducerCallLocked(producer, [sessions_triggered](Producer* e) {
    e->OnTriggersActivated(sessions_triggered);
  });
}

}  // namespace sluice
