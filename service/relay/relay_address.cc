#include "service/relay/relay_address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "service/ipc/ipc_socket.h"

namespace sluice {
namespace {

bool ParsePort(const std::string& s, uint32_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffu) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

std::string Errno(const std::string& what) { return what + ": " + strerror(errno); }

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return Status::Error(Errno("fcntl O_NONBLOCK"));
  return Status::Ok();
}

}  // namespace

std::string RelayAddress::ToString() const {
  switch (kind) {
    case Kind::kUnix: return "unix:" + path;
    case Kind::kDevice: return path;
    case Kind::kVsock:
      return "vsock:" + (has_cid ? std::to_string(cid) + ":" : std::string()) + std::to_string(port);
    case Kind::kTcp: return "tcp:" + (host.empty() ? "127.0.0.1" : host) + ":" + std::to_string(port);
  }
  return "?";
}

StatusOr<RelayAddress> ParseRelayAddress(const std::string& text) {
  RelayAddress a;
  auto bad = [&](const std::string& why) {
    return Status::Error("relay address '" + text + "': " + why +
                         " (PATH, unix:PATH, virtio:NAME, /dev/DEVICE, vsock:[CID:]PORT or "
                         "tcp:[HOST:]PORT)");
  };
  if (text.empty()) return bad("empty");
  if (text.rfind("unix:", 0) == 0) {
    a.kind = RelayAddress::Kind::kUnix;
    a.path = text.substr(5);
    if (a.path.empty()) return bad("no path");
  } else if (text.rfind("virtio:", 0) == 0) {
    std::string name = text.substr(7);
    if (name.empty() || name.find('/') != std::string::npos) return bad("bad port name");
    a.kind = RelayAddress::Kind::kDevice;
    a.path = "/dev/virtio-ports/" + name;
  } else if (text.rfind("/dev/", 0) == 0) {
    a.kind = RelayAddress::Kind::kDevice;
    a.path = text;
  } else if (text.rfind("vsock:", 0) == 0) {
    a.kind = RelayAddress::Kind::kVsock;
    std::string rest = text.substr(6);
    size_t colon = rest.find(':');
    if (colon != std::string::npos) {
      if (!ParsePort(rest.substr(0, colon), &a.cid)) return bad("bad CID");
      a.has_cid = true;
      rest = rest.substr(colon + 1);
    }
    if (!ParsePort(rest, &a.port)) return bad("bad port");
  } else if (text.rfind("tcp:", 0) == 0) {
    a.kind = RelayAddress::Kind::kTcp;
    std::string rest = text.substr(4);
    size_t colon = rest.rfind(':');
    if (colon != std::string::npos) {
      a.host = rest.substr(0, colon);
      rest = rest.substr(colon + 1);
    }
    if (!ParsePort(rest, &a.port) || a.port == 0 || a.port > 65535) return bad("bad port");
    if (!a.host.empty()) {
      in_addr addr4;
      if (inet_pton(AF_INET, a.host.c_str(), &addr4) != 1) return bad("HOST must be a numeric IPv4 address");
    }
  } else {
    a.kind = RelayAddress::Kind::kUnix;
    a.path = text;
  }
  return a;
}

StatusOr<ScopedFd> OpenRelayAddress(const RelayAddress& a) {
  const std::string where = a.ToString();
  switch (a.kind) {
    case RelayAddress::Kind::kUnix: {
      SLUICE_ASSIGN_OR_RETURN(ScopedFd fd, ConnectUnixSocket(a.path, /*nonblocking=*/true));
      return fd;
    }
    case RelayAddress::Kind::kDevice: {
      ScopedFd fd(open(a.path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
      if (!fd.valid())
        return Status::Error(Errno(a.path) +
                             (errno == ENOENT ? " (no such port: is the guest's virtio-serial port "
                                                "named so, and virtio_console loaded?)"
                                              : ""));
      struct stat st;
      if (fstat(fd.get(), &st) != 0 || !S_ISCHR(st.st_mode))
        return Status::Error(a.path + ": not a character device");
      return fd;
    }
    case RelayAddress::Kind::kVsock: {
      ScopedFd fd(socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!fd.valid()) return Status::Error(Errno(where + ": socket (is vsock available? modprobe vmw_vsock_virtio_transport)"));
      sockaddr_vm sa{};
      sa.svm_family = AF_VSOCK;
      sa.svm_cid = a.has_cid ? a.cid : VMADDR_CID_HOST;
      sa.svm_port = a.port;
      if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
        return Status::Error(Errno(where + ": connect"));
      SLUICE_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
      return fd;
    }
    case RelayAddress::Kind::kTcp: {
      ScopedFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!fd.valid()) return Status::Error(Errno(where + ": socket"));
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(static_cast<uint16_t>(a.port));
      if (inet_pton(AF_INET, a.host.empty() ? "127.0.0.1" : a.host.c_str(), &sa.sin_addr) != 1)
        return Status::Error(where + ": bad address");
      if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
        return Status::Error(Errno(where + ": connect"));
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      SLUICE_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
      return fd;
    }
  }
  return Status::Error(where + ": unknown kind");
}

StatusOr<ScopedFd> ListenRelayAddress(const RelayAddress& a, const ListenOptions& unix_listen) {
  const std::string where = a.ToString();
  switch (a.kind) {
    case RelayAddress::Kind::kUnix: {
      return ListenUnixSocket(a.path, unix_listen);
    }
    case RelayAddress::Kind::kDevice:
      return Status::Error(where + ": a device is the guest's end; the host listens on a socket");
    case RelayAddress::Kind::kVsock: {
      ScopedFd fd(socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (!fd.valid()) return Status::Error(Errno(where + ": socket (no vsock on this host? modprobe vhost_vsock)"));
      sockaddr_vm sa{};
      sa.svm_family = AF_VSOCK;
      sa.svm_cid = a.has_cid ? a.cid : VMADDR_CID_ANY;
      sa.svm_port = a.port;
      if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd.get(), 16) != 0)
        return Status::Error(Errno(where + ": bind/listen"));
      return fd;
    }
    case RelayAddress::Kind::kTcp: {
      ScopedFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (!fd.valid()) return Status::Error(Errno(where + ": socket"));
      int one = 1;
      setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(static_cast<uint16_t>(a.port));
      if (inet_pton(AF_INET, a.host.empty() ? "127.0.0.1" : a.host.c_str(), &sa.sin_addr) != 1)
        return Status::Error(where + ": bad address");
      if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd.get(), 16) != 0)
        return Status::Error(Errno(where + ": bind/listen"));
      return fd;
    }
  }
  return Status::Error(where + ": unknown kind");
}

ScopedFd AcceptRelayConnection(int listen_fd) {
  ScopedFd fd(accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (fd.valid()) {
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // Fails harmlessly off TCP.
  }
  return fd;
}

}  // namespace sluice
