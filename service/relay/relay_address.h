// Where a relay link goes: the address syntax `sluice-relay --to` and
// `sluiced --relay-socket` take, and opening it.
//
//   PATH, unix:PATH        a unix stream socket (containers, tests; QEMU's
//                          socket chardev connects to the host's)
//   virtio:NAME            the virtio-serial port /dev/virtio-ports/NAME
//                          (guest side only: a character device)
//   /dev/...               any character device, e.g. /dev/vport0p1 or
//                          /dev/hvc1 (guest side only)
//   vsock:CID:PORT         vsock, guest side (CID 2: the host)
//   vsock:PORT             vsock, host side: listens on any CID
//   tcp:HOST:PORT          TCP; a host side without HOST listens on
//                          127.0.0.1 only (tcp:PORT); numeric addresses
//
// All fds come back non-blocking and close-on-exec.
#ifndef SLUICE_SERVICE_RELAY_RELAY_ADDRESS_H_
#define SLUICE_SERVICE_RELAY_RELAY_ADDRESS_H_

#include <cstdint>
#include <string>

#include "service/ipc/ipc_socket.h"
#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"

namespace sluice {

struct RelayAddress {
  enum class Kind { kUnix, kDevice, kVsock, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;     // kUnix, kDevice.
  std::string host;     // kTcp ("" on a listener: 127.0.0.1).
  uint32_t cid = 0;     // kVsock (connect side).
  uint32_t port = 0;    // kVsock, kTcp.
  bool has_cid = false;

  std::string ToString() const;
};

// Parses ADDR; the error says which form was expected.
StatusOr<RelayAddress> ParseRelayAddress(const std::string& text);

// The guest side: connects (sockets) or opens (devices). Blocking connect,
// then non-blocking.
StatusOr<ScopedFd> OpenRelayAddress(const RelayAddress& address);

// The host side: a listening socket (unix: created as ListenUnixSocket does,
// with `unix_listen`'s mode and group). Devices cannot be listened on.
StatusOr<ScopedFd> ListenRelayAddress(const RelayAddress& address, const ListenOptions& unix_listen);

// Accepts one pending connection on a listener from ListenRelayAddress
// (invalid fd when none is pending).
ScopedFd AcceptRelayConnection(int listen_fd);

}  // namespace sluice

#endif  // SLUICE_SERVICE_RELAY_RELAY_ADDRESS_H_
