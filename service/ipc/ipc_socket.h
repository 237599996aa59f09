// Unix-domain stream sockets for sluice's IPC: listening, connecting, peer
// credentials, and sending/receiving bytes with file descriptors attached
// (SCM_RIGHTS). Thin wrappers over the syscalls; framing is in ipc_frame.h.
//
// Every socket is created close-on-exec, and every received fd too
// (MSG_CMSG_CLOEXEC). Sends use MSG_NOSIGNAL: a peer that went away is an
// error return, never SIGPIPE. docs/IPC.md lists paths and permissions.
#ifndef SLUICE_SERVICE_IPC_IPC_SOCKET_H_
#define SLUICE_SERVICE_IPC_IPC_SOCKET_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"

namespace sluice {

struct PeerCredentials {
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  pid_t pid = 0;
  // Supplementary groups at connect time (SO_PEERGROUPS, Linux 4.13+);
  // empty where the kernel cannot say.
  std::vector<gid_t> groups;
};

struct ListenOptions {
  // Permission bits of the socket file (chmod after bind).
  mode_t mode = 0660;
  // Group owning the socket file; -1 keeps the creator's group.
  gid_t group = static_cast<gid_t>(-1);
  int backlog = 64;
};

// Creates the parent directory (0755) if missing, removes a stale socket file
// (one nobody accepts on), binds, chmods and listens. Fails with a clear
// message if another process is listening on `path`. Non-blocking.
StatusOr<ScopedFd> ListenUnixSocket(const std::string& path, const ListenOptions& options);

// Makes a socket someone else created ours to accept on: systemd's socket
// activation passes listening sockets that are blocking unless the unit says
// NonBlocking=yes, and Android init's `socket` directive passes bound sockets
// that may not listen yet. Checks that `fd` is an AF_UNIX stream socket, sets
// O_NONBLOCK and FD_CLOEXEC, and listens (again: harmless on a listening one).
// `what` names the socket in errors ("fd 3 (producer socket)").
Status AdoptListeningSocket(int fd, int backlog, const std::string& what);

// Connects to `path` (blocking connect). `nonblocking` sets O_NONBLOCK after.
// Errors say what to do: refused for permissions, with the socket's mode,
// owner and group and how to get in (SocketPermissionFix); no listener, with
// "is sluiced running?".
StatusOr<ScopedFd> ConnectUnixSocket(const std::string& path, bool nonblocking = false);

// Who may connect to a socket with this stat, and the fix for someone else:
// "the socket is 0660 root:sluice, so only root and the members of group
// sluice may connect; join the group (usermod -aG sluice USER, then log in
// again) or run as root".
std::string SocketPermissionFix(const struct stat& st);

// Accepts one connection (non-blocking, close-on-exec). Invalid fd if none
// is pending or on error.
ScopedFd AcceptUnixSocket(int listen_fd);

// SO_PEERCRED of a connected socket.
bool GetPeerCredentials(int fd, PeerCredentials* creds);

// sendmsg() with MSG_NOSIGNAL, and `fd_to_send` (if >= 0) as SCM_RIGHTS on
// the first byte. Returns bytes sent, or -1 with errno (EAGAIN on a full
// non-blocking socket).
ssize_t SendWithFd(int sock, const void* data, size_t size, int fd_to_send);

// Blocking helper: sends all bytes (retrying on EINTR/partial sends); the fd
// goes with the first byte. False on error (peer gone).
bool SendAll(int sock, const void* data, size_t size, int fd_to_send = -1);

// recvmsg() accepting up to kMaxFdsPerRecv fds. Received fds are appended to
// *fds. Returns bytes read, 0 on EOF, -1 with errno.
inline constexpr size_t kMaxFdsPerRecv = 4;
ssize_t RecvWithFds(int sock, void* buf, size_t size, std::vector<ScopedFd>* fds);

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_SOCKET_H_
