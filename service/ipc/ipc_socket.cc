#include "service/ipc/ipc_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstdio>
#include <cstring>
#include "shm/base/errno_message.h"

namespace sluice {
namespace {

bool MakeAddress(const std::string& path, sockaddr_un* addr, socklen_t* len) {
  memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) return false;
  memcpy(addr->sun_path, path.data(), path.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return true;
}

// mkdir -p with mode 0755 for the directories that do not exist.
Status MakeParentDirs(const std::string& path) {
  size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos) {
    std::string dir = path.substr(0, pos);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::Error("cannot create directory " + dir + ": " + ErrnoMessage(errno) +
                           " (create it or pick another socket path)");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ScopedFd> ListenUnixSocket(const std::string& path, const ListenOptions& options) {
  sockaddr_un addr;
  socklen_t len = 0;
  if (!MakeAddress(path, &addr, &len))
    return Status::Error("socket path '" + path + "' is empty or longer than 107 bytes");
  SLUICE_RETURN_IF_ERROR(MakeParentDirs(path));

  // A socket file that nobody accepts on is stale (a previous daemon died):
  // remove it. One that accepts belongs to a running daemon: refuse.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Status::Error(path + " exists and is not a socket; remove it or pick another path");
    ScopedFd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (probe.valid() && connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0)
      return Status::Error(path + " is in use by a running service; stop it or pick another path");
    unlink(path.c_str());
  }

  ScopedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::Error("socket(AF_UNIX) failed: " + ErrnoMessage(errno));
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return Status::Error("cannot bind " + path + ": " + ErrnoMessage(errno));
  if (chmod(path.c_str(), options.mode) != 0)
    return Status::Error("cannot chmod " + path + ": " + ErrnoMessage(errno));
  if (options.group != static_cast<gid_t>(-1) &&
      chown(path.c_str(), static_cast<uid_t>(-1), options.group) != 0)
    return Status::Error("cannot chown " + path + " to gid " + std::to_string(options.group) +
                         ": " + ErrnoMessage(errno));
  if (listen(fd.get(), options.backlog) != 0)
    return Status::Error("cannot listen on " + path + ": " + ErrnoMessage(errno));
  return fd;
}

Status AdoptListeningSocket(int fd, int backlog, const std::string& what) {
  int domain = 0, type = 0;
  socklen_t len = sizeof(int);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
    return Status::Error(what + " is not a socket: " + ErrnoMessage(errno) +
                         " (check the unit's or init file's socket lines)");
  len = sizeof(int);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || domain != AF_UNIX ||
      type != SOCK_STREAM)
    return Status::Error(what + " is not a unix stream socket (make it ListenStream= in "
                         "systemd, `socket NAME stream` in Android init)");
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
      fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
    return Status::Error("cannot make " + what + " non-blocking: " + ErrnoMessage(errno));
  if (listen(fd, backlog) != 0)
    return Status::Error("cannot listen on " + what + ": " + ErrnoMessage(errno));
  return Status::Ok();
}

std::string SocketPermissionFix(const struct stat& st) {
  char mode[8];
  snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
  std::string group = std::to_string(st.st_gid);
  if (struct group* g = getgrgid(st.st_gid)) group = g->gr_name;
  std::string owner = std::to_string(st.st_uid);
  if (struct passwd* pw = getpwuid(st.st_uid)) owner = pw->pw_name;
  return std::string("the socket is ") + mode + " " + owner + ":" + group + ", so only " + owner +
         ((st.st_mode & 0060) == 0060 ? " and the members of group " + group : std::string()) +
         " may connect; " +
         ((st.st_mode & 0060) == 0060 ? "join the group (usermod -aG " + group +
                                            " USER, then log in again) or run as root"
                                      : std::string("run as root"));
}

StatusOr<ScopedFd> ConnectUnixSocket(const std::string& path, bool nonblocking) {
  sockaddr_un addr;
  socklen_t len = 0;
  if (!MakeAddress(path, &addr, &len))
    return Status::Error("socket path '" + path + "' is empty or longer than 107 bytes");
  ScopedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::Error("socket(AF_UNIX) failed: " + ErrnoMessage(errno));
  int r;
  do {
    r = connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    const int error = errno;
    std::string cause = "cannot connect to " + path + ": " + ErrnoMessage(error);
    if (error == EACCES || error == EPERM) {
      struct stat st;
      if (stat(path.c_str(), &st) == 0) return Status::Error(cause + ": " + SocketPermissionFix(st));
      return Status::Error(cause + " (a directory on the way is closed to you)");
    }
    if (error == ENOENT || error == ECONNREFUSED)
      return Status::Error(cause + " (is sluiced running? start it)");
    return Status::Error(cause);
  }
  if (nonblocking) fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  return fd;
}

ScopedFd AcceptUnixSocket(int listen_fd) {
  return ScopedFd(accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
}

bool GetPeerCredentials(int fd, PeerCredentials* creds) {
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred))
    return false;
  creds->uid = cred.uid;
  creds->gid = cred.gid;
  creds->pid = cred.pid;
  // Groups, for the consumer gid allowlist; ERANGE says how many there are.
  std::vector<gid_t> groups(32);
  for (int attempt = 0; attempt < 2; attempt++) {
    socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
      groups.resize(bytes / sizeof(gid_t));
      creds->groups = std::move(groups);
      break;
    }
    if (errno != ERANGE) break;
    groups.resize(bytes / sizeof(gid_t) + 1);
  }
  return true;
}

ssize_t SendWithFd(int sock, const void* data, size_t size, int fd_to_send) {
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd_to_send >= 0) {
    memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd_to_send, sizeof(int));
  }
  ssize_t r;
  do {
    r = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (r < 0 && errno == EINTR);
  return r;
}

bool SendAll(int sock, const void* data, size_t size, int fd_to_send) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t r = SendWithFd(sock, p, size, fd_to_send);
    if (r <= 0) return false;
    fd_to_send = -1;  // Travelled with the first byte.
    p += r;
    size -= static_cast<size_t>(r);
  }
  return true;
}

ssize_t RecvWithFds(int sock, void* buf, size_t size, std::vector<ScopedFd>* fds) {
  iovec iov{buf, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerRecv)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t r;
  do {
    r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return r;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds->emplace_back(fd);
    }
  }
  // MSG_CTRUNC: the kernel closed the fds that did not fit; nothing to do.
  return r;
}

}  // namespace sluice
