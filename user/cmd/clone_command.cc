#include "user/cmd/clone_command.h"

#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "service/ipc/consumer_ipc_client.h"
#include "shm/base/command_line.h"
#include "user/cmd/record_config.h"
#include "user/cmd/record_output.h"

namespace sluice {
namespace {

constexpr char kUsage[] =
    "usage: sluice clone KEY -o FILE [--consumer-socket PATH]\n"
    "  writes a snapshot of the running session KEY (its --detach key, or its\n"
    "  config's unique_session_name; sluice sessions lists them) to FILE.\n"
    "  sluiced flushes the session's producers first, so the snapshot holds\n"
    "  their data up to now, and copies its buffers; the session records on,\n"
    "  undisturbed, and a later clone or its stop still has everything not\n"
    "  overwritten. The session must keep its data in RING_BUFFER buffers\n"
    "  until the end (sluice record --ring), not stream it into its file.\n"
    "  -o, --out FILE          where the snapshot goes: written beside FILE under\n"
    "                          a temporary name, renamed over FILE once whole;\n"
    "                          - for standard output\n"
    "  --consumer-socket PATH  sluiced's consumer socket (default /run/sluice/consumer.sock)\n"
    "Exit status: 0 written; 1 sluiced refused or the file could not be written\n"
    "(one line says why); 2 bad usage.\n";

}  // namespace

int RunCloneCommand(int argc, char** argv) {
  enum { kConsumerSocket = kFirstLongOnly };
  static const struct option kOptions[] = {{"help", no_argument, nullptr, 'h'},
                                           {"out", required_argument, nullptr, 'o'},
                                           {"consumer-socket", required_argument, nullptr, kConsumerSocket},
                                           {nullptr, 0, nullptr, 0}};
  std::string socket = RecordArgs{}.consumer_socket;
  std::string key, output;
  Status parsed = ParseCommandLine(argc, argv, "ho:", kOptions, [&](const CommandLineArg& arg) {
    switch (arg.id) {
      case 'h': return HelpRequested();
      case 'o': output = arg.value; return Status::Ok();
      case kConsumerSocket: socket = arg.value; return Status::Ok();
      case kOperand:
        if (!key.empty()) return Status::Error("one KEY at a time");
        key = arg.value;
        return Status::Ok();
    }
    return Status::Error("unexpected argument");
  });
  if (parsed.ok() && key.empty()) parsed = Status::Error("no KEY given (sluice sessions lists them)");
  if (parsed.ok() && output.empty()) parsed = Status::Error("no output file: give -o FILE");
  if (!parsed.ok()) return CommandLineExit(parsed, "sluice clone", kUsage);

  auto client = ConsumerIpcClient::Connect(socket);
  if (!client.ok()) {
    fprintf(stderr, "sluice clone: %s\n", client.status().message().c_str());
    return 1;
  }
  ConsumerIpcClient* consumer = client->get();
  auto cloned = consumer->CloneSession(key);
  if (!cloned.ok()) {
    fprintf(stderr, "sluice clone: %s\n", cloned.status().message().c_str());
    return 1;
  }
  if (!cloned->flushed)
    fprintf(stderr,
            "sluice clone: not every producer of session '%s' answered the flush in time: the "
            "snapshot may miss what they wrote last (its TraceStats count the failed flush)\n",
            key.c_str());
  // Nothing at -o is touched until the snapshot is whole (record_output.h).
  auto created = RecordOutput::Create(output);
  if (!created.ok()) {
    (void)consumer->FreeBuffers();
    fprintf(stderr, "sluice clone: %s\n", created.status().message().c_str());
    return 1;
  }
  std::unique_ptr<RecordOutput> file = std::move(created.value());
  Status read = ReadBuffersIntoFile(consumer, file->fd(), 0);
  (void)consumer->FreeBuffers();
  if (!read.ok()) {
    fprintf(stderr, "sluice clone: %s\n", read.message().c_str());
    return 1;  // ~RecordOutput removes the partial snapshot.
  }
  struct stat st {};
  const uint64_t bytes = fstat(file->fd(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  if (Status committed = file->Commit(); !committed.ok()) {
    fprintf(stderr, "sluice clone: %s\n", committed.message().c_str());
    return 1;
  }
  // With -o - standard output carries the snapshot.
  fprintf(file->to_stdout() ? stderr : stdout, "%s: snapshot of session %llu '%s', %llu bytes\n",
          file->display_name().c_str(), static_cast<unsigned long long>(cloned->source_id), key.c_str(),
          static_cast<unsigned long long>(bytes));
  return 0;
}

}  // namespace sluice
