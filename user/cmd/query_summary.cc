#include "user/cmd/query_summary.h"

#include <string_view>

#include "shm/base/file_util.h"
#include "user/query/engine/query_engine.h"
#include "user/query/summary/trace_summary.h"
#include "user/query/summary/trace_summary_text.h"

namespace sluice {

StatusOr<std::vector<perfetto::protos::TraceSummarySpec>> ReadTraceSummarySpecs(
    const std::vector<std::string>& paths) {
  std::vector<perfetto::protos::TraceSummarySpec> specs;
  for (const std::string& path : paths) {
    StatusOr<std::string> bytes = ReadFile(path);
    if (!bytes.ok()) return Status::Error(bytes.status().message() + "; --summary-spec takes a TraceSummarySpec file");
    specs.emplace_back();
    if (std::string_view(path).ends_with(".pb")) {
      if (!specs.back().ParseFromString(*bytes))
        return Status::Error(path + ": not a binary TraceSummarySpec (a text spec's name must not end in .pb)");
    } else if (Status parsed = ParseTraceSummarySpecText(*bytes, &specs.back()); !parsed.ok()) {
      return Status::Error(path + ": " + parsed.message());
    }
  }
  return specs;
}

Status WriteTraceSummary(QueryEngine& engine, const std::vector<perfetto::protos::TraceSummarySpec>& specs,
                         const QuerySummaryOptions& options, FILE* out) {
  TraceSummaryComputation what;
  what.metadata_query_id = options.metadata_query_id;
  what.all_metrics = false;
  if (options.metric_ids) {
    std::string_view rest = *options.metric_ids;
    std::string lower;
    for (char c : rest) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower == "all") {
      what.all_metrics = true;
    } else {
      while (!rest.empty()) {
        size_t comma = rest.find(',');
        what.metric_ids.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    }
  }
  SLUICE_ASSIGN_OR_RETURN(perfetto::protos::TraceSummary summary,
                          ComputeTraceSummary(engine.db(), engine.dialect(), specs, what));
  const std::string bytes = options.binary ? summary.SerializeAsString() : TraceSummaryText(summary);
  if (fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size()) return Status::Error("cannot write the summary");
  return Status::Ok();
}

}  // namespace sluice
