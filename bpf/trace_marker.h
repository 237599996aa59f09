/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* Record of a write(2) to a tracefs trace_marker file (bpf/trace_marker.bpf.c).
 * Variable size: the payload follows the fixed part, and the record is
 * reserved in one of a few size classes (see trace_marker.bpf.c), so the
 * ring reports a size >= sizeof(struct sluice_trace_marker) + captured.
 * User space turns it into an ftrace `print` event, byte for byte what the
 * kernel would have put in the ring buffer (see docs/BPF.md). */
#ifndef SLUICE_BPF_TRACE_MARKER_H_
#define SLUICE_BPF_TRACE_MARKER_H_

#include "sluice_record.h"

/* sluice_trace_marker.flags */
#define SLUICE_MARKER_READ_FAULT 0x1u /* payload unreadable: captured == 0 */
#define SLUICE_MARKER_FENTRY 0x2u     /* seen by fentry/vfs_write */

struct sluice_trace_marker {            /* SLUICE_REC_TRACE_MARKER */
  struct sluice_record_header hdr;
  __u32 tgid;                           /* writer's thread group id */
  __u32 len;                            /* bytes the writer asked to write */
  __u32 captured;                       /* payload bytes that follow (<= len) */
  __u16 marker_index;                   /* which configured trace_marker file */
  __u16 flags;
  /* char payload[captured]; */
};

#endif /* SLUICE_BPF_TRACE_MARKER_H_ */
