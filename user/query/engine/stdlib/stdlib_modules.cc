#include "user/query/engine/stdlib/stdlib_modules.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace sluice {
namespace {

struct EmbeddedFile {
  const char* path;  // Relative to user/query/engine/stdlib/: "sched/time_in_state.sql".
  const char* text;
};

constexpr EmbeddedFile kFiles[] = {
#include "user/query/engine/stdlib/stdlib_files.inc"
};

std::string ModuleName(std::string_view path) {
  std::string name(path.substr(0, path.size() - std::string_view(".sql").size()));
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

// Upstream's module families written for data a Linux kernel trace does not
// hold.
constexpr std::string_view kOutOfScope[] = {"android.", "chrome.", "wattson.", "viz.", "v8.", "pkvm.",
                                            "appleos.", "export.", "graphs."};

// SLUICE_STDLIB_DIR: the modules' texts from that directory (its .sql files,
// named by their paths under it) instead of the compiled-in copies, so that a
// module can be edited and tried without a rebuild. The texts live as long
// as the process.
std::vector<StdlibModule>* ModulesFromDirectory(const std::string& dir) {
  auto* list = new std::vector<StdlibModule>();
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".sql") continue;
    std::ifstream in(it->path());
    auto* text = new std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    list->push_back(StdlibModule{ModuleName(std::filesystem::relative(it->path(), dir).string()), *text});
  }
  return list;
}

}  // namespace

std::string StdlibModule::Description() const {
  std::string text;
  size_t at = 0;
  while (at < sql.size() && sql.substr(at, 2) == "--") {
    const size_t end = std::min(sql.find('\n', at), sql.size());
    std::string_view line = sql.substr(at + 2, end - at - 2);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    text += (text.empty() || line.empty() ? "" : " ") + std::string(line);
    at = end + 1;
  }
  const size_t period = text.find(". ");
  return period == std::string::npos ? text : text.substr(0, period + 1);
}

const std::vector<StdlibModule>& StdlibModules() {
  static const auto* modules = [] {
    const char* dir = std::getenv("SLUICE_STDLIB_DIR");
    auto* list = dir && *dir ? ModulesFromDirectory(dir) : new std::vector<StdlibModule>();
    if (!(dir && *dir))
      for (const EmbeddedFile& f : kFiles) list->push_back(StdlibModule{ModuleName(f.path), f.text});
    std::sort(list->begin(), list->end(), [](const StdlibModule& a, const StdlibModule& b) { return a.name < b.name; });
    return list;
  }();
  return *modules;
}

const StdlibModule* FindStdlibModule(std::string_view name) {
  for (const StdlibModule& m : StdlibModules())
    if (m.name == name) return &m;
  return nullptr;
}

std::string WhyNoStdlibModule(std::string_view name) {
  for (std::string_view family : kOutOfScope) {
    if (name.substr(0, family.size()) == family)
      return "module " + std::string(name) + " is written for " +
             std::string(family.substr(0, family.size() - 1)) +
             " data, which a Linux kernel trace does not hold: sluice query has the modules for Linux kernel and "
             "atrace traces (sluice query --list-modules)";
  }
  return "no such module: " + std::string(name) + " (sluice query --list-modules lists the modules sluice has)";
}

}  // namespace sluice
