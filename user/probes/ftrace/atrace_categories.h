// atrace's categories ("sched", "freq", "idle", "gfx", "am", ...) and the
// kernel events behind each, as Perfetto and Android's atrace define them,
// usable on any Linux: `sluice record sched freq idle` and a config's
// ftrace_config.atrace_categories enable the kernel events this kernel has.
// A category's user-space side (Trace.beginSection() in apps, written by
// atrace-enabled processes to trace_marker) arrives as ftrace/print events,
// which every category turns on.
//
// An entry is "group/event" or "group/*" (every event of the group). Kernels
// lack many of them (binder, mdss, f2fs exist only on some): a category
// stands for the entries the running kernel has, and a missing one is not an
// error. A category with no kernel events (user space only, e.g. "am") still
// records ftrace/print.
#ifndef SLUICE_USER_PROBES_FTRACE_ATRACE_CATEGORIES_H_
#define SLUICE_USER_PROBES_FTRACE_ATRACE_CATEGORIES_H_

#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct AtraceCategory {
  std::string_view name;
  std::string_view description;
  std::vector<std::string_view> kernel_events;  // Empty: user space only.
};

// Every category, by name.
const std::vector<AtraceCategory>& AtraceCategories();

// The category called `name`, or nullptr.
const AtraceCategory* FindAtraceCategory(std::string_view name);

// The category's kernel events that are in `available` ("group/name" as in
// tracefs' available_events), "group/*" expanded, in the table's order, each
// once; always ending with ftrace/print (which available_events does not
// list: it has no enable file).
std::vector<std::string> ExpandAtraceCategory(const AtraceCategory& category,
                                              const std::vector<std::string>& available);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_ATRACE_CATEGORIES_H_
