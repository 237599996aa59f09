// Which `metadata` keys and `stats` names belong to one machine of a trace
// (their rows carry that machine's id) and which to the import as a whole
// (machine_id NULL), as upstream's trace_processor (v58.2) scopes them
// (its metadata and stats key lists: kMachine / kMachineAndTrace against
// kGlobal / kTrace). A relayed trace has a row per machine for the former.
#ifndef SLUICE_USER_QUERY_IMPORTER_MACHINE_SCOPE_H_
#define SLUICE_USER_QUERY_IMPORTER_MACHINE_SCOPE_H_

#include <string_view>

namespace sluice {

// A metadata key describing one machine (system_name, tracing_started_ns,
// ...); false for the trace's own (trace_uuid, trace_type, ...).
bool IsMachineMetadataKey(std::string_view key);

// A stat of the import as a whole (sorter_push_event_out_of_order, ...);
// every other stat is one machine's. sluice's own stats are a machine's.
bool IsGlobalStat(std::string_view name);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_MACHINE_SCOPE_H_
