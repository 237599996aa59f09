// The listening sockets sluiced may inherit instead of creating them: from
// systemd's socket activation (service/init/sluiced.socket) or from Android
// init's `socket` directive (service/init/sluice.rc).
//
//   systemd   LISTEN_PID=<our pid> LISTEN_FDS=2: fd 3 is the producer socket,
//             fd 4 the consumer socket (the order of ListenStream= lines;
//             sd_listen_fds(3) protocol, read without libsystemd). With
//             sluice-relay.socket enabled too, LISTEN_FDS=3 and the one
//             LISTEN_FDNAMES calls "relay" is the relay socket, wherever
//             systemd put it; the other two keep their order.
//   Android   ANDROID_SOCKET_sluice_producer=<fd>,
//             ANDROID_SOCKET_sluice_consumer=<fd>: init created, bound,
//             chmod'ed and chown'ed them as the .rc says; and/or
//             ANDROID_SOCKET_traced_producer and _consumer, traced's
//             sockets, when sluiced takes traced's place.
//
// Either source gives both sockets or it is an error (one inherited and one
// created would give the two different owners and modes). With neither,
// sluiced creates the sockets at its --producer-socket/--consumer-socket
// paths. The fds are adopted (non-blocking, listening) by IpcServer.
#ifndef SLUICE_SERVICE_INHERITED_SOCKETS_H_
#define SLUICE_SERVICE_INHERITED_SOCKETS_H_

#include <sys/types.h>

#include <functional>
#include <string>

#include "shm/base/status.h"

namespace sluice {

inline constexpr char kAndroidProducerSocketEnv[] = "ANDROID_SOCKET_sluice_producer";
inline constexpr char kAndroidConsumerSocketEnv[] = "ANDROID_SOCKET_sluice_consumer";
// traced's sockets, when init gives them to sluiced in traced's place: they
// take the same two protocols (docs/ANDROID.md).
inline constexpr char kAndroidTracedProducerSocketEnv[] = "ANDROID_SOCKET_traced_producer";
inline constexpr char kAndroidTracedConsumerSocketEnv[] = "ANDROID_SOCKET_traced_consumer";

struct InheritedSockets {
  int producer_fd = -1;  // -1: none inherited, create the socket.
  int consumer_fd = -1;
  int perfetto_producer_fd = -1;  // traced's pair (Android), if given.
  int perfetto_consumer_fd = -1;
  int relay_fd = -1;  // sluice-relay.socket's (systemd), if given.
  std::string source;  // "systemd" or "Android init"; empty if none.
};

// Reads the environment through `get_env` (getenv in sluiced, a map in
// tests). `pid` is ours: systemd's variables name the process they are for,
// and a child that inherited them must not take the sockets.
StatusOr<InheritedSockets> FindInheritedSockets(
    const std::function<const char*(const char*)>& get_env, pid_t pid);

// Unsets the variables FindInheritedSockets read, so that nothing sluiced
// starts inherits them.
void ClearInheritedSocketsEnv();

}  // namespace sluice

#endif  // SLUICE_SERVICE_INHERITED_SOCKETS_H_
