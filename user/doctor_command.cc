#include "user/doctor_command.h"

#include <cstdio>

namespace sluice {

int RunDoctorCommand(int, char**) {
  // Replaced by the full doctor (issue 6, item 6).
  puts("sluice doctor: not implemented yet");
  return 1;
}

}  // namespace sluice
