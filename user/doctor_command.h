// `sluice doctor`: what this machine supports for tracing, one line per check
// with pass/fail and the fix.
#ifndef SLUICE_USER_DOCTOR_COMMAND_H_
#define SLUICE_USER_DOCTOR_COMMAND_H_

namespace sluice {
int RunDoctorCommand(int argc, char** argv);
}  // namespace sluice

#endif  // SLUICE_USER_DOCTOR_COMMAND_H_
