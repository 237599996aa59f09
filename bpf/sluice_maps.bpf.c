/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* Definitions of the maps and settings declared in sluice_common.bpf.h.
 * Linked with the program files into build/bpf/sluice_events.bpf.o. */
#define SLUICE_DEFINE_MAPS
#include "sluice_common.bpf.h"

/* "Dual MIT/GPL": GPL-compatible for the kernel (license_is_gpl_compatible),
 * so GPL-only helpers stay usable; matches the SPDX line above. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 sluice_per_cpu_rings = 1;
const volatile __u64 sluice_wakeup_bytes = 0;
const volatile __u32 sluice_filter_ids = 0;
const volatile __u32 sluice_comm_prefix_count = 0;
const volatile __u64 sluice_comm_prefix[SLUICE_MAX_COMM_PREFIXES][2] = {};
const volatile __u64 sluice_comm_mask[SLUICE_MAX_COMM_PREFIXES][2] = {};
const volatile __u64 sluice_rate_cost_ns = 0;
const volatile __u64 sluice_rate_burst_ns = 0;
