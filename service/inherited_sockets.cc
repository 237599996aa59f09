#include "service/inherited_sockets.h"

#include <stdlib.h>

#include <cstdint>

#include "shm/base/string_util.h"

namespace sluice {
namespace {

constexpr int kSystemdFirstFd = 3;  // SD_LISTEN_FDS_START.

StatusOr<InheritedSockets> FromSystemd(const char* listen_pid, const char* listen_fds, pid_t pid) {
  uint64_t for_pid = 0, nfds = 0;
  if (!ParseU64(listen_pid, &for_pid) || for_pid != static_cast<uint64_t>(pid))
    return InheritedSockets{};  // Meant for another process.
  if (!ParseU64(listen_fds, &nfds) || nfds != 2)
    return Status::Error(std::string("socket activation passed LISTEN_FDS=") + listen_fds +
                         "; expected 2 (producer, consumer): give sluiced.socket two "
                         "ListenStream= lines in that order");
  return InheritedSockets{kSystemdFirstFd, kSystemdFirstFd + 1, "systemd"};
}

StatusOr<int> AndroidFd(const char* name, const char* value) {
  uint32_t fd = 0;
  if (!ParseU32(value, &fd) || fd > 1u << 20)
    return Status::Error(std::string(name) + "='" + value + "' is not a file descriptor");
  return static_cast<int>(fd);
}

}  // namespace

StatusOr<InheritedSockets> FindInheritedSockets(
    const std::function<const char*(const char*)>& get_env, pid_t pid) {
  const char* listen_pid = get_env("LISTEN_PID");
  const char* listen_fds = get_env("LISTEN_FDS");
  if (listen_pid && listen_fds) {
    SLUICE_ASSIGN_OR_RETURN(InheritedSockets s, FromSystemd(listen_pid, listen_fds, pid));
    if (!s.source.empty()) return s;
  }
  const char* producer = get_env(kAndroidProducerSocketEnv);
  const char* consumer = get_env(kAndroidConsumerSocketEnv);
  if (!producer && !consumer) return InheritedSockets{};
  if (!producer || !consumer)
    return Status::Error(std::string("init passed only ") +
                         (producer ? kAndroidProducerSocketEnv : kAndroidConsumerSocketEnv) +
                         ": give the sluiced service both `socket sluice_producer` and "
                         "`socket sluice_consumer` lines");
  SLUICE_ASSIGN_OR_RETURN(int producer_fd, AndroidFd(kAndroidProducerSocketEnv, producer));
  SLUICE_ASSIGN_OR_RETURN(int consumer_fd, AndroidFd(kAndroidConsumerSocketEnv, consumer));
  return InheritedSockets{producer_fd, consumer_fd, "Android init"};
}

void ClearInheritedSocketsEnv() {
  for (const char* name : {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", kAndroidProducerSocketEnv,
                           kAndroidConsumerSocketEnv})
    unsetenv(name);
}

}  // namespace sluice
