#include "user/cmd/query_httpd.h"


#include <cstdio>
#include <filesystem>

#include "shm/base/shared_library.h"
#include "sluice_install_paths.h"  // Generated: kSluiceInstallLibDir.
#include "user/query/rpc/trace_processor_rpc.h"

namespace sluice {
namespace {

constexpr char kCommand[] = "sluice query";

// The engine's RPC behind the plugin's interface.
class RpcEndpoints : public QueryHttpEndpoints {
 public:
  explicit RpcEndpoints(TraceProcessorRpc* rpc) : rpc_(rpc) {}
  std::string GetStatus() override { return rpc_->GetStatus(); }
  std::string AppendTraceData(std::string_view chunk) override { return rpc_->AppendTraceData(chunk); }
  void NotifyEndOfFile() override { rpc_->NotifyEndOfFile(); }
  std::string RestoreInitialTables() override {
    Status restored = rpc_->RestoreInitialTables();
    return restored.ok() ? "" : restored.message();
  }
  void Query(std::string_view query_args, const std::function<bool(std::string_view)>& sink) override {
    rpc_->Query(query_args, sink);
  }
  std::string ComputeTraceSummary(std::string_view summary_args) override {
    return rpc_->ComputeTraceSummary(summary_args);
  }
  std::string ComputeMetric(std::string_view metric_args) override { return rpc_->ComputeMetric(metric_args); }
  std::string DisableAndReadMetatrace() override { return rpc_->DisableAndReadMetatrace(); }

 private:
  TraceProcessorRpc* rpc_;
};

// Where the plugin is: next to the running binary (a build tree, where
// build/sluice and build/sluice_tests are), else where make install put it.
std::string PluginPath() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path beside = exe.parent_path() / kQueryHttpServerPlugin;
    if (std::filesystem::exists(beside, error)) return beside;
  }
  return std::string(kSluiceInstallLibDir) + "/" + kQueryHttpServerPlugin;
}

}  // namespace

int ServeQueryHttp(const QueryHttpdOptions& options, TraceProcessorRpc* rpc) {
  StatusOr<SharedLibrary> plugin =
      SharedLibrary::Open(PluginPath(), "--httpd", "reinstall sluice, or run make in its source tree");
  QueryHttpServeFunction* serve = nullptr;
  Status resolved = plugin.ok() ? plugin->Resolve(kQueryHttpServeSymbol, &serve) : plugin.status();
  if (!resolved.ok()) {
    fprintf(stderr, "%s: %s\n", kCommand, resolved.message().c_str());
    return 1;
  }
  RpcEndpoints endpoints(rpc);
  return serve(&options, &endpoints);
}

}  // namespace sluice
