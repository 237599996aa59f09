# vm-tests and kernel config checks (docs/vm-tests.md, docs/KCONFIG.md).
#
#   make vm-test                      boot each kernel of KERNELS in QEMU and run
#                                     vm-tests/scenarios/*.sh in it
#   make vm-test KERNELS="debian-6.12 ~/linux/arch/x86/boot/bzImage"
#   make vm-test VM_ONLY='10-*'       only the scenarios matching a glob
#   make vm-test ARCH=arm64           the arm64 build (build/arm64/) in
#                                     qemu-system-aarch64 (debian-6.12 by
#                                     default), checked by the host's x86_64
#                                     build/sluice and sluice-trace-check
#   make vm-test ARCH=arm64 VM_KERNEL_TESTS=0
#                                     the arm64 scenarios 00-40, without
#                                     50-kernel-tests, so sluice_tests is not
#                                     cross-built (docs/vm-tests.md, "arm64")
#   make vm-test-all                  everything: the x86_64 default set, then
#                                     arm64 (debian-6.12) with every scenario
#   make vm-selftest                  the harness's own test: a stand-in sluice,
#                                     plus a panic, a hang, a stalled guest, a
#                                     scenario timeout and a dead serial IRQ
#   make vm-formats                   refresh tests/data/kernel-formats/debian_*
#                                     from the Debian kernels
#   make kconfig-check [KCONFIG=path/to/.config]
#
# Variables:
#   KERNELS   kernel names (vm-tests/fetch-kernel.sh): debian-X.Y[-flavour],
#             debian:PACKAGE, host, or PATH/bzImage[:CONFIG]
#   KCONFIG   kernel config to check (default /proc/config.gz, else
#             /boot/config-$(uname -r)); .gz files are read as is
#   VM_OUT    where results go (default $(BUILD_DIR)/vm-tests)
#   VM_CACHE, VM_ACCEL, VM_TIMEOUT, VM_BOOT_TIMEOUT, VM_SCENARIO_TIMEOUT,
#   VM_SPEED_FACTOR, VM_STALL_TIMEOUT, VM_SERIAL_IRQ, VM_SMP, VM_MEM, VM_ONLY,
#   VM_APPEND, VM_GTEST, VM_GTEST_REPEAT, VM_WORKLOAD_SCALE: see vm-tests/run-kernel.sh;
#   VM_REQUIRE_SLUICE=1: fail instead of skipping when the binaries are not
#   built (vm-tests/run.sh). All are read from the environment or the make
#   command line.

ifeq ($(ARCH),arm64)
KERNELS ?= debian-6.12
VM_ARCH := arm64
else
KERNELS ?= debian-6.1 debian-6.12 host
VM_ARCH := x86_64
endif
KCONFIG ?= $(if $(wildcard /proc/config.gz),/proc/config.gz,/boot/config-$(shell uname -r))
VM_OUT ?= $(BUILD_DIR)/vm-tests
VM_FORMATS_KERNELS ?= debian-6.1 debian-6.12

# Hand the VM_* settings given on the make command line to the scripts.
export VM_ARCH VM_OUT VM_CACHE VM_ACCEL VM_TCG_THREAD VM_TIMEOUT VM_BOOT_TIMEOUT VM_SCENARIO_TIMEOUT \
  VM_SPEED_FACTOR VM_STALL_TIMEOUT VM_SERIAL_IRQ \
  VM_SMP VM_MEM VM_ONLY VM_APPEND VM_GTEST VM_GTEST_REPEAT VM_WORKLOAD_SCALE VM_REQUIRE_SLUICE

# The binaries (and the test binary, for 50-kernel-tests) go into the guest;
# the scenarios whose binary does not exist yet skip, with the reason.
# VM_KERNEL_TESTS=0 leaves out 50-kernel-tests, and with it the test binary
# the guest would need (for a cross build, the larger part of the build).
VM_KERNEL_TESTS ?= 1
ifeq ($(VM_KERNEL_TESTS),0)
VM_ONLY := [0-4]*
VM_GUEST_TEST_BIN :=
else
VM_GUEST_TEST_BIN := $(TEST_BIN)
endif

ifeq ($(ARCH),arm64)
# The guest runs build/arm64's binaries; the host checks their traces with
# the native build's tools (a trace from the arm64 guest, read on x86_64).
VM_HOST_TOOLS := build/sluice build/sluice-trace-check
vm-host-tools:
	$(Q)$(MAKE) --no-print-directory ARCH=x86_64 BUILD_DIR=build $(VM_HOST_TOOLS)
vm-test: $(BINS) $(VM_GUEST_TEST_BIN) vm-host-tools
	$(Q)VM_GUEST_BUILD_DIR=$(BUILD_DIR) BUILD_DIR=build bash vm-tests/run.sh $(KERNELS)
.PHONY: vm-host-tools
else
vm-test: $(BINS) $(VM_GUEST_TEST_BIN)
	$(Q)BUILD_DIR=$(BUILD_DIR) bash vm-tests/run.sh $(KERNELS)
endif

# Both architectures, every scenario. (Not in CI as a whole: the arm64 half
# needs the whole cross build; CI runs the subset above.)
vm-test-all:
	$(Q)$(MAKE) --no-print-directory ARCH=x86_64 vm-test
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 VM_KERNEL_TESTS=1 vm-test

vm-selftest:
	$(Q)bash vm-tests/selftest/run.sh

vm-formats:
	$(Q)if [ "$(VM_ARCH)" != x86_64 ]; then echo "vm-formats: x86_64 only: the trees go to tests/data/kernel-formats/<kernel>, the x86 kernels' names; an arm64 guest's tree is in $(VM_OUT)/<kernel>/results/formats" >&2; exit 1; fi
	$(Q)VM_ONLY=00-env VM_SAVE_FORMATS=tests/data/kernel-formats BUILD_DIR=$(BUILD_DIR) \
	  bash vm-tests/run.sh $(VM_FORMATS_KERNELS)

kconfig-check:
	$(Q)bash kconfigs/check.sh $(KCONFIG)

.PHONY: vm-test vm-test-all vm-selftest vm-formats kconfig-check
