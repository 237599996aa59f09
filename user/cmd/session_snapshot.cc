#include "user/cmd/session_snapshot.h"

#include <sys/stat.h>

#include <memory>

#include "service/ipc/consumer_ipc_client.h"
#include "user/cmd/record_output.h"

namespace sluice {

StatusOr<SessionSnapshot> WriteSessionSnapshot(const std::string& socket, const std::string& key,
                                               const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ConsumerIpcClient> consumer, ConsumerIpcClient::Connect(socket));
  SLUICE_ASSIGN_OR_RETURN(CloneResult cloned, consumer->CloneSession(key));
  // Nothing at `path` is touched until the snapshot is whole (record_output.h).
  auto created = RecordOutput::Create(path);
  if (!created.ok()) {
    (void)consumer->FreeBuffers();
    return created.status();
  }
  std::unique_ptr<RecordOutput> file = std::move(created.value());
  // Compressed as the session's own file would be.
  Status read = ReadBuffersIntoFile(consumer.get(), file->fd(), 0, cloned.compression);
  (void)consumer->FreeBuffers();
  SLUICE_RETURN_IF_ERROR(read);  // ~RecordOutput removes the partial snapshot.
  SessionSnapshot snapshot;
  struct stat st {};
  snapshot.bytes = fstat(file->fd(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  SLUICE_RETURN_IF_ERROR(file->Commit());
  snapshot.source_id = cloned.source_id;
  snapshot.flushed = cloned.flushed;
  snapshot.display_name = file->display_name();
  snapshot.to_stdout = file->to_stdout();
  return snapshot;
}

}  // namespace sluice
