// BpfMarkerFile: a tracefs trace_marker file as the BPF programs recognise
// it in the kernel: by inode number and superblock device, never by path.
//
// Why (ino, dev): the sys_enter_write program only sees an fd; it follows
// current->files->fdt->fd[fd]->f_inode and compares i_ino and i_sb->s_dev.
// Every path to the file (/sys/kernel/tracing, the debugfs automount
// /sys/kernel/debug/tracing, a dup()ed fd, a bind mount) reaches the same
// inode of tracefs' single superblock. Each instance (instances/<name>/) has
// its own trace_marker inode, so a config picks instances explicitly.
//
// Careful with dev: fstat() reports st_dev in the *user-space* encoding
// (new_encode_dev(): minor low byte, major, minor high bits), while the
// kernel's dev_t in s_dev is MKDEV(major, minor) = major << 20 | minor.
// tracefs has an anonymous device (major 0), whose minor can exceed 255 on
// busy machines, where the two encodings differ. KernelDevFromStatDev()
// converts. Inode numbers of tracefs files come from get_next_ino() at
// creation and are stable while the file exists; an instance removed and
// recreated gets new ones (resolve at start, not earlier).
#ifndef SLUICE_USER_PROBES_BPF_BPF_MARKER_FILES_H_
#define SLUICE_USER_PROBES_BPF_BPF_MARKER_FILES_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shm/base/status.h"

namespace sluice {

struct BpfMarkerFile {
  std::string instance;  // "" = root instance
  std::string path;
  uint64_t ino = 0;
  uint32_t kernel_dev = 0;
};

// st_dev (user-space encoding) -> the kernel's internal dev_t.
uint32_t KernelDevFromStatDev(dev_t st_dev);

// Resolves trace_marker of each instance ("" = root) under the tracefs
// mount `tracefs_root` (empty: find it like Tracefs::Open). An instance that
// does not exist is an error naming it (the source does not create
// instances: the ftrace source or the user does).
StatusOr<std::vector<BpfMarkerFile>> ResolveMarkerFiles(
    const std::string& tracefs_root, const std::vector<std::string>& instances);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_BPF_BPF_MARKER_FILES_H_
