#include "user/probes/ftrace/ftrace_buffer_choice.h"

namespace sluice {

bool FtraceConfigWantsTraceMarker(const perfetto::protos::FtraceConfig& config) {
  if (config.atrace_categories_size() > 0 || config.atrace_apps_size() > 0) return true;
  for (const std::string& e : config.ftrace_events()) {
    if (e == "ftrace/print" || e == "print" || e == "ftrace/*") return true;
  }
  return false;
}

StatusOr<FtraceBufferChoice> ChooseFtraceBuffer(const perfetto::protos::FtraceConfig& config,
                                                const std::vector<TracefsReader>& top_level_readers,
                                                bool kernel_copies_trace_marker,
                                                const std::string& own_instance_name) {
  FtraceBufferChoice choice;
  choice.instance_name = config.instance_name();
  if (!config.instance_name().empty() || top_level_readers.empty()) return choice;
  const std::string others = DescribeTracefsReaders(top_level_readers);
  const bool wants_marker = FtraceConfigWantsTraceMarker(config);
  if (wants_marker && !kernel_copies_trace_marker) {
    return Status::Error(
        "another tracer reads the top-level ftrace buffer: " + others +
        "; both reading it would split the events between them, and an instance of sluice's own cannot get "
        "trace_marker writes (ftrace/print, atrace) on this kernel (no options/copy_trace_marker, Linux 6.17+): "
        "stop that tracer first, or record without ftrace/print and atrace categories");
  }
  choice.instance_name = own_instance_name;
  choice.copy_trace_marker = wants_marker;
  choice.reason = others + " reads the top-level ftrace buffer: recording from instance " + own_instance_name +
                  " of sluice's own" + (wants_marker ? ", with trace_marker writes copied into it" : "") +
                  ", which leaves that tracer's buffer alone";
  return choice;
}

}  // namespace sluice
