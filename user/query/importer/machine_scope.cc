#include "user/query/importer/machine_scope.h"

#include <algorithm>
#include <iterator>

namespace sluice {
namespace {

constexpr std::string_view kMachineMetadataKeys[] = {
    "all_data_source_flushed_ns", "all_data_source_started_ns", "android_build_fingerprint",
    "android_device_manufacturer", "android_guest_soc_model", "android_hardware_revision",
    "android_incremental_build", "android_ram_model", "android_sdk_version", "android_serial_console",
    "android_soc_model", "android_storage_model", "ftrace_latest_data_start_ns", "slow_start_data_source",
    "system_machine", "system_name", "system_ram_bytes", "system_ram_gb", "system_release", "system_version",
    "timezone_off_mins", "tracing_disabled_ns", "tracing_service_version", "tracing_started_ns",
    // sluice's own SystemInfo keys (upstream puts these in `machine` only).
    "num_cpus", "page_size"};

constexpr std::string_view kGlobalStats[] = {
    "clock_sync_cache_miss", "deobfuscate_location_parse_error", "extra_parsing_descriptors_error",
    "guess_trace_type_duration_ns", "heap_graph_invalid_string_id", "heap_graph_malformed_packet",
    "heap_graph_missing_packet", "heap_graph_non_finalized_graph", "invalid_clock_snapshots",
    "parse_trace_duration_ns", "sorter_push_event_out_of_order", "trace_sorter_negative_timestamp_dropped"};

}  // namespace

bool IsMachineMetadataKey(std::string_view key) {
  return std::find(std::begin(kMachineMetadataKeys), std::end(kMachineMetadataKeys), key) !=
         std::end(kMachineMetadataKeys);
}

bool IsGlobalStat(std::string_view name) {
  return std::find(std::begin(kGlobalStats), std::end(kGlobalStats), name) != std::end(kGlobalStats);
}

}  // namespace sluice
