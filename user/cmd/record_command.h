// `sluice record`: one command from nothing to a trace file.
//
//   sluice record -o trace.pftrace [-t 10s] [-b 64mb] [--bpf] [EVENTS...]
//   sluice record -c config.pbtx --txt [-o trace.pftrace]
//   sluice record --daemon ...        (through a running sluiced + sluice-probes)
//
// By default the service, the probes and the consumer all run in this process
// (the same TracingService and ProbesProducer code as sluiced and
// sluice-probes), so nothing needs to be started first. The trace streams into
// the output file while recording (write_into_file), so it is valid up to the
// last complete packet even if the recorder is killed. When the session ends
// on a fault (the disk fills, sluiced dies) the file stays valid to its last
// byte and one line on stderr says what it holds and what was lost; the exit
// code is 1 (record_fault.h). The flags and the TraceConfig they build are in
// record_config.h.
#ifndef SLUICE_USER_CMD_RECORD_COMMAND_H_
#define SLUICE_USER_CMD_RECORD_COMMAND_H_

namespace sluice {

int RunRecordCommand(int argc, char** argv);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_RECORD_COMMAND_H_
