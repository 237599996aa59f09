// `sluice trigger NAME...`: fires triggers, as Perfetto's `trigger_perfetto`
// does. It connects to sluiced's producer socket as a producer (named
// "sluice-trigger" unless --producer-name says otherwise: what a trigger's
// producer_name_regex matches), sends the names and waits for sluiced's
// answer: how many sessions acted on them (TraceConfig.trigger_config;
// docs/SERVICE.md, "Triggers").
#ifndef SLUICE_USER_CMD_TRIGGER_COMMAND_H_
#define SLUICE_USER_CMD_TRIGGER_COMMAND_H_

namespace sluice {
int RunTriggerCommand(int argc, char** argv);
}  // namespace sluice

#endif  // SLUICE_USER_CMD_TRIGGER_COMMAND_H_
