#include "user/cmd/doctor_kconfig.h"

#include <dirent.h>
#include <errno.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "shm/base/string_util.h"
#include "sluice_install_paths.h"  // Generated: kSluiceInstallDataDir.

namespace sluice {
namespace {

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// "NAME=value" with a non-empty [A-Za-z0-9_] name and a non-empty value.
bool SplitAssignment(std::string_view s, std::string* name, std::string* value) {
  size_t eq = s.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 >= s.size()) return false;
  for (size_t i = 0; i < eq; i++) {
    if (!IsNameChar(s[i])) return false;
  }
  *name = std::string(s.substr(0, eq));
  *value = std::string(s.substr(eq + 1));
  return true;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// Calls fn(line_number, line) for each line, without the newline.
template <typename Fn>
void ForEachNumberedLine(std::string_view text, Fn fn) {
  int n = 0;
  ForEachLine(text, [&](std::string_view line) {
    fn(++n, TrimRight(line));
    return true;
  });
}

bool Satisfied(const KernelConfig& config, const std::string& name, const std::string& value) {
  auto it = config.find(name);
  return it != config.end() && it->second == value;
}

bool HasFragments(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.size() > 7 && name.substr(name.size() - 7) == ".config") found = true;
  }
  closedir(d);
  return found;
}

}  // namespace

StatusOr<KconfigFragment> ParseKconfigFragment(std::string_view feature, std::string_view text) {
  KconfigFragment f;
  f.feature = std::string(feature);
  const std::string where = f.feature + ".config";
  Status error = Status::Ok();
  bool pending = false;  // A reason line waits for its option.
  KconfigOption current;
  ForEachNumberedLine(text, [&](int n, std::string_view line) {
    if (!error.ok()) return;
    auto fail = [&](const std::string& msg) {
      error = Status::Error("kconfig fragment " + where + ":" + std::to_string(n) + ": " + msg +
                            " (see docs/KCONFIG.md for the format)");
    };
    if (line.starts_with("# about:")) {
      if (f.about.empty()) f.about = std::string(TrimLeft(line.substr(8)));
    } else if (line.starts_with("# optional:")) {
      f.optional = true;
    } else if (line.starts_with("# need:") || line.starts_with("# want:")) {
      if (pending) return fail("reason line without an option after it");
      current = KconfigOption();
      current.required = line.starts_with("# need:");
      current.reason = std::string(TrimLeft(line.substr(7)));
      pending = true;
    } else if (line.starts_with("# or: ")) {
      std::string name, value;
      if (!SplitAssignment(TrimLeft(line.substr(6)), &name, &value)) {
        return fail("\"# or:\" wants NAME=value without CONFIG_");
      }
      if (!pending) return fail("\"# or:\" line outside an option's reason block");
      current.alternatives.emplace_back("CONFIG_" + name, value);
    } else if (line.starts_with("CONFIG_")) {
      std::string name, value;
      if (!SplitAssignment(line, &name, &value) || name.size() <= 7) {
        return fail("unexpected option syntax");
      }
      if (!pending) return fail("option without a \"# need:\" or \"# want:\" reason line");
      current.name = std::move(name);
      current.value = std::move(value);
      current.line = n;
      f.options.push_back(std::move(current));
      current = KconfigOption();
      pending = false;
    } else if (line.starts_with("# CONFIG_") && line.find(" is not set") != std::string_view::npos) {
      return fail("\"is not set\" options are not supported: fragments only turn options on");
    }
  });
  SLUICE_RETURN_IF_ERROR(error);
  if (pending) {
    return Status::Error("kconfig fragment " + where + ": reason line without an option after it");
  }
  if (f.options.empty()) return Status::Error("kconfig fragment " + where + " has no options");
  return f;
}

KernelConfig ParseKernelConfig(std::string_view text) {
  KernelConfig config;
  ForEachNumberedLine(text, [&](int, std::string_view line) {
    std::string name, value;
    if (line.starts_with("CONFIG_") && SplitAssignment(line, &name, &value) && name.size() > 7) {
      config[std::move(name)] = std::move(value);
    }
  });
  return config;
}

StatusOr<std::string> ReadMaybeGzipFile(const std::string& path, size_t max_bytes) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    return Status::Error("cannot open " + path + " (" +
                         std::string(errno ? std::strerror(errno) : "out of memory") + ")");
  }
  std::string out;
  char buf[16384];
  for (;;) {
    int n = gzread(gz, buf, sizeof(buf));
    if (n < 0) {
      int zerr = 0;
      std::string msg = gzerror(gz, &zerr);
      gzclose(gz);
      return Status::Error("cannot read " + path + " (" + msg + ")");
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      gzclose(gz);
      return Status::Error(path + " is larger than " + std::to_string(max_bytes >> 20) +
                           " MiB: not a kernel config");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  gzclose(gz);
  return out;
}

std::string FindRunningKernelConfig(std::string_view release) {
  const std::string candidates[] = {"/proc/config.gz", "/boot/config-" + std::string(release)};
  for (const std::string& path : candidates) {
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

StatusOr<std::vector<KconfigFragment>> LoadKconfigFragments(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return Status::Error("cannot open kconfigs dir " + dir + " (" + std::strerror(errno) +
                         "): pass --kconfigs-dir DIR");
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".config") == 0) {
      names.push_back(name.substr(0, name.size() - 7));
    }
  }
  closedir(d);
  static const std::vector<std::string> kOrder = {"base", "ftrace", "events", "bpf", "kprobes", "vm"};
  auto rank = [](const std::string& n) {
    auto it = std::find(kOrder.begin(), kOrder.end(), n);
    return static_cast<size_t>(it - kOrder.begin());
  };
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
  });
  std::vector<KconfigFragment> fragments;
  for (const std::string& name : names) {
    SLUICE_ASSIGN_OR_RETURN(std::string text,
                            ReadMaybeGzipFile(dir + "/" + name + ".config", 1 << 20));
    SLUICE_ASSIGN_OR_RETURN(KconfigFragment f, ParseKconfigFragment(name, text));
    fragments.push_back(std::move(f));
  }
  return fragments;
}

std::string InstalledKconfigsDir() { return std::string(kSluiceInstallDataDir) + "/kconfigs"; }

std::string KconfigsDirCandidatesText() {
  return "../kconfigs or ../share/sluice/kconfigs next to the binary, " + InstalledKconfigsDir() +
         ", /sluice/kconfigs";
}

std::string FindKconfigsDir(const std::string& exe_path, const std::string& installed_dir) {
  std::vector<std::string> candidates;
  size_t slash = exe_path.rfind('/');
  if (slash != std::string::npos) {
    const std::string exe_dir = exe_path.substr(0, slash);
    candidates.push_back(exe_dir + "/../kconfigs");
    candidates.push_back(exe_dir + "/../share/sluice/kconfigs");
  }
  candidates.push_back(installed_dir);
  candidates.push_back("/sluice/kconfigs");
  for (const std::string& dir : candidates) {
    if (HasFragments(dir)) return dir;
  }
  return "";
}

KconfigFeatureReport CheckKconfigFragment(const KconfigFragment& fragment,
                                          const KernelConfig& config) {
  KconfigFeatureReport r;
  r.feature = fragment.feature;
  r.optional = fragment.optional;
  r.option_count = fragment.options.size();
  for (const KconfigOption& o : fragment.options) {
    bool ok = Satisfied(config, o.name, o.value);
    for (const auto& [name, value] : o.alternatives) ok = ok || Satisfied(config, name, value);
    if (ok) continue;
    auto it = config.find(o.name);
    KconfigUnmet u{&o, it == config.end() ? "not set" : it->second};
    (o.required ? r.missing : r.wanted).push_back(std::move(u));
  }
  return r;
}

}  // namespace sluice
