#include "user/cmd/clone_command.h"

#include <cstdio>
#include <string>

#include "shm/base/command_line.h"
#include "user/cmd/record_config.h"
#include "user/cmd/session_snapshot.h"

namespace sluice {
namespace {

constexpr char kUsage[] =
    "usage: sluice clone KEY -o FILE [--consumer-socket PATH]\n"
    "  writes a snapshot of the running session KEY (its --detach key, or its\n"
    "  config's unique_session_name, or #ID, its id in sluice sessions) to FILE.\n"
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

  StatusOr<SessionSnapshot> snapshot = WriteSessionSnapshot(socket, key, output);
  if (!snapshot.ok()) {
    fprintf(stderr, "sluice clone: %s\n", snapshot.status().message().c_str());
    return 1;
  }
  if (!snapshot->flushed)
    fprintf(stderr,
            "sluice clone: not every producer of session '%s' answered the flush in time: the "
            "snapshot may miss what they wrote last (its TraceStats count the failed flush)\n",
            key.c_str());
  // With -o - standard output carries the snapshot.
  fprintf(snapshot->to_stdout ? stderr : stdout, "%s: snapshot of session %llu '%s', %llu bytes\n",
          snapshot->display_name.c_str(), static_cast<unsigned long long>(snapshot->source_id),
          key.c_str(), static_cast<unsigned long long>(snapshot->bytes));
  return 0;
}

}  // namespace sluice
