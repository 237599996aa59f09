#include "user/probes/bpf/bpf_marker_files.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

#include "user/probes/tracefs.h"

namespace sluice {

uint32_t KernelDevFromStatDev(dev_t st_dev) {
  // MKDEV() of include/linux/kdev_t.h: 12 bits of major, 20 of minor.
  return (static_cast<uint32_t>(major(st_dev)) << 20) |
         (static_cast<uint32_t>(minor(st_dev)) & 0xfffff);
}

StatusOr<std::vector<BpfMarkerFile>> ResolveMarkerFiles(
    const std::string& tracefs_root, const std::vector<std::string>& instances) {
  std::vector<BpfMarkerFile> files;
  for (const std::string& instance : instances) {
    TracefsOptions options;
    options.root = tracefs_root;
    options.instance_name = instance;
    options.create_instance = false;
    auto tracefs = Tracefs::Open(options);
    if (!tracefs.ok()) return tracefs.status();
    BpfMarkerFile f;
    f.instance = instance;
    f.path = (*tracefs)->Path("trace_marker");
    struct stat st;
    if (stat(f.path.c_str(), &st) != 0) {
      return Status::Error("linux.bpf: cannot stat " + f.path + ": " + strerror(errno) +
                           " (is tracefs mounted, and does the instance exist?)");
    }
    f.ino = st.st_ino;
    f.kernel_dev = KernelDevFromStatDev(st.st_dev);
    bool duplicate = false;
    for (const BpfMarkerFile& other : files) {
      duplicate |= other.ino == f.ino && other.kernel_dev == f.kernel_dev;
    }
    if (!duplicate) files.push_back(f);
  }
  return files;
}

}  // namespace sluice
