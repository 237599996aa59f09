// Sizes and durations on command lines: one parser each, one convention for
// every sluice binary (sluice record -b/-k/--smb/-t, sluice-probes --smb,
// sluiced --max-shm-size/--max-buffer-size), so the same text means the same
// amount wherever it is typed.
//
//   size      NUMBER[UNIT]  units b, k/kb, m/mb, g/gb (KiB, MiB, GiB: powers
//                           of 1024), any case; a bare number is KiB, the
//                           unit of every size_kb field in a TraceConfig and of
//                           tracefs' buffer_size_kb. "64mb", "512kb", "4096",
//                           "1.5mb", "65536b".
//   duration  NUMBER[UNIT]  units ms, s, m/min, h, any case; a bare number is
//                           seconds. "10s", "500ms", "2m", "1.5s", "3".
//
// NUMBER is decimal digits with an optional fraction ("1.5"); no sign,
// exponent, hex, "nan", "inf" or spaces. The amount is computed exactly (no
// floating point) and must come out whole in the result's unit (KiB, ms):
// "1000b" and "1.0005s" are errors rather than silently rounded. Errors are
// one line that quotes the text.
#ifndef SLUICE_SHM_BASE_UNITS_H_
#define SLUICE_SHM_BASE_UNITS_H_

#include <cstdint>
#include <string_view>

#include "shm/base/status.h"

namespace sluice {

// A size, in KiB: more than 0 and at most 1 TiB (more than any buffer sluice
// can use, and safe to multiply by 1024 in 64 bits).
StatusOr<uint64_t> ParseSizeKb(std::string_view text);

// A duration, in milliseconds: at most 4,000,000 s (46 days; fits the
// uint32 duration_ms of a TraceConfig). 0 is allowed.
StatusOr<uint32_t> ParseDurationMs(std::string_view text);

// For --help texts, so every binary documents the same rule in the same
// words. A macro so that it concatenates with the usage string literals.
#define SLUICE_SIZE_HELP "SIZE: 64mb, 512kb, 1gb, 65536b (b, kb, mb, gb; a bare number is KiB)\n"
#define SLUICE_DURATION_HELP "DURATION: 10s, 500ms, 2m, 1h (ms, s, m, h; a bare number is seconds)\n"

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_UNITS_H_
