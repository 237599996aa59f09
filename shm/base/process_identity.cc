#include "shm/base/process_identity.h"

#include <vector>

#include "shm/base/file_util.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

// Field 22 (starttime) is the 20th after the state (field 3).
constexpr size_t kStartTimeAfterState = 19;

StatusOr<std::string> ReadBootId(const std::string& proc) {
  const std::string path = proc + "/sys/kernel/random/boot_id";
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(path, 256));
  std::string_view id = TrimWhitespace(text);
  if (id.empty()) return Status::Error(path + " is empty");
  return std::string(id);
}

}  // namespace

StatusOr<ProcStat> ParseProcStat(std::string_view text) {
  const size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) return Status::Error("no ')' after the command name");
  std::vector<std::string_view> fields;
  std::string_view rest = text.substr(paren + 1);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  ProcStat stat;
  if (fields.size() <= kStartTimeAfterState || fields[0].size() != 1 ||
      !ParseU64(fields[kStartTimeAfterState], &stat.start_time)) {
    return Status::Error("fewer fields than a Linux /proc/<pid>/stat has");
  }
  stat.state = fields[0][0];
  return stat;
}

StatusOr<ProcessIdentity> ReadProcessIdentity(pid_t pid, const std::string& proc) {
  const std::string path = proc + "/" + std::to_string(pid) + "/stat";
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(path, 4096));
  auto stat = ParseProcStat(text);
  if (!stat.ok()) return Status::Error("cannot parse " + path + ": " + stat.status().message());
  ProcessIdentity id;
  id.pid = static_cast<uint32_t>(pid);
  id.start_time = stat->start_time;
  SLUICE_ASSIGN_OR_RETURN(id.boot_id, ReadBootId(proc));
  return id;
}

bool IsProcessRunning(const ProcessIdentity& id, const std::string& proc) {
  auto boot_id = ReadBootId(proc);
  // Without a boot id to compare, the pid and start time still decide.
  if (boot_id.ok() && *boot_id != id.boot_id) return false;
  auto text = ReadFile(proc + "/" + std::to_string(id.pid) + "/stat", 4096);
  if (!text.ok()) return false;
  auto stat = ParseProcStat(*text);
  // Unparsable: assume it runs, so that its changes are never undone under it.
  if (!stat.ok()) return true;
  return stat->start_time == id.start_time && stat->state != 'Z' && stat->state != 'X';
}

}  // namespace sluice
