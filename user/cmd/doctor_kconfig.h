// The kernel-config half of `sluice doctor`: which options of kconfigs/*.config
// the running kernel's configuration lacks, feature by feature.
//
// kconfigs/ holds one fragment per feature (docs/KCONFIG.md). A fragment is a
// plain kconfig fragment that scripts/kconfig/merge_config.sh can merge, with
// structured comments that say why each option is there:
//
//   # about: one line on the feature               (first such line wins)
//   # optional: why the feature may be left out    (marks the feature optional)
//   # need: reason          or   # want: reason    (required / recommended;
//   # or: OTHER=y                                   one reason line, then any
//   CONFIG_NAME=value                               number of alternatives,
//                                                   then the option itself)
//
// Alternatives are written without the CONFIG_ prefix so that merge_config.sh
// does not read them as values. An option is satisfied when the kernel config
// has it, or one of its alternatives, at exactly the wanted value; "# CONFIG_X
// is not set" and absence both read as "not set". kconfigs/check.sh does the
// same in awk for build machines; this is the version that runs on the target,
// where sluice is installed and there may be no awk.
//
// The kernel config itself comes from /proc/config.gz (CONFIG_IKCONFIG_PROC)
// or /boot/config-$(uname -r); both are read through zlib's gzopen, which
// passes uncompressed files through unchanged. Everything read here is
// untrusted text: lines that are not options are ignored, sizes are capped.
#ifndef SLUICE_USER_CMD_DOCTOR_KCONFIG_H_
#define SLUICE_USER_CMD_DOCTOR_KCONFIG_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shm/base/status.h"

namespace sluice {

// One option of a fragment. `name` keeps the CONFIG_ prefix.
struct KconfigOption {
  std::string name;
  std::string value;
  bool required = false;  // "# need:" (else "# want:").
  std::string reason;
  // (name with CONFIG_, value) pairs from "# or:" lines, any of which will do.
  std::vector<std::pair<std::string, std::string>> alternatives;
  int line = 0;
};

struct KconfigFragment {
  std::string feature;  // File name without ".config": "bpf".
  std::string about;
  bool optional = false;
  std::vector<KconfigOption> options;
};

// Option name (CONFIG_X) -> value as the config file has it ("y", "m", "64",
// "\"str\""). Options that are "not set" are absent.
using KernelConfig = std::map<std::string, std::string>;

// Parses one fragment's text. Errors (one line, with the line number) on an
// option without a reason line, a reason line without an option, option
// syntax that is neither, or a fragment with no options: the same lint as
// kconfigs/check.sh, so a broken fragment is noticed rather than skipped.
StatusOr<KconfigFragment> ParseKconfigFragment(std::string_view feature, std::string_view text);

// Parses a .config: "CONFIG_X=value" lines; everything else is ignored.
KernelConfig ParseKernelConfig(std::string_view text);

// Reads a whole file, gzip-compressed or not (at most `max_bytes`).
StatusOr<std::string> ReadMaybeGzipFile(const std::string& path, size_t max_bytes = 16 << 20);

// The kernel config of the running kernel: the first readable of
// /proc/config.gz and /boot/config-<release>. Empty if none is.
std::string FindRunningKernelConfig(std::string_view release);

// Loads every *.config in `dir`, in dependency order (base ftrace events bpf
// kprobes vm), then any other fragment by name.
StatusOr<std::vector<KconfigFragment>> LoadKconfigFragments(const std::string& dir);

// Where `make install` puts the fragments: $(PREFIX)/share/sluice/kconfigs
// of the build (the Makefile writes the prefix into a generated header, and
// a changed PREFIX rebuilds what includes it; mk/install.mk).
std::string InstalledKconfigsDir();

// Where the fragments live when --kconfigs-dir is not given, first that has a
// *.config: ../kconfigs from the directory of `exe_path` (build/sluice in a
// checkout), ../share/sluice/kconfigs from there (an installed tree, also
// when moved or unpacked under another root), `installed_dir`, then
// /sluice/kconfigs (the vm-tests guest). Empty if none does.
std::string FindKconfigsDir(const std::string& exe_path,
                            const std::string& installed_dir = InstalledKconfigsDir());

// The candidates FindKconfigsDir tries, for messages: "../kconfigs next to
// the binary, ..." with the installed dir of this build.
std::string KconfigsDirCandidatesText();

// What the kernel config lacks of one fragment.
struct KconfigUnmet {
  const KconfigOption* option = nullptr;  // Points into the fragment.
  std::string actual;                     // Value in the config, or "not set".
};
struct KconfigFeatureReport {
  std::string feature;
  bool optional = false;
  size_t option_count = 0;
  std::vector<KconfigUnmet> missing;  // Required options not satisfied.
  std::vector<KconfigUnmet> wanted;   // Recommended options not satisfied.
};

KconfigFeatureReport CheckKconfigFragment(const KconfigFragment& fragment,
                                          const KernelConfig& config);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_DOCTOR_KCONFIG_H_
