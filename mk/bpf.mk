# BPF programs of the linux.bpf data source (included by the root Makefile).
#
#   bpf/*.bpf.c ──clang -target bpf──▶ $(BPF_OUT)/obj/*.bpf.o      (one per unit, -MMD -MP)
#               ──bpftool gen object─▶ $(BPF_OUT)/sluice_events.bpf.o  (static link: the units
#                                        share maps and settings as externs, see bpf/sluice_common.bpf.h)
#               ──bpftool gen skeleton▶ $(BPF_OUT)/sluice_events.skel.h (included by user/probes/bpf/bpf_loader.cc)
#
# vmlinux.h is generated from the build host's kernel BTF into $(BPF_OUT), never
# committed. It is regenerated when /sys/kernel/btf/vmlinux is newer (a reboot
# into another kernel). CO-RE makes the objects load on other kernels anyway.
#
# ARCH=arm64 (a cross build): no arm64 kernel runs here, so the BTF is that of
# Debian's arm64 kernel package BPF_BTF_KERNEL (debian-6.12, the kernel the
# arm64 vm-tests boot), cut out of its boot image by mk/kernel-btf.sh into
# $(BPF_OUT)/vmlinux.btf; the download goes to the vm-tests' VM_CACHE. The
# programs are compiled with -D__TARGET_ARCH_arm64, which is what
# bpf_tracing.h's BPF_PROG and PT_REGS macros read; they use no pt_regs and
# no syscall numbers (the sys_enter_write tracepoint's context is the generic
# struct syscall_trace_enter), so nothing else differs.
#
# Variables read from the root Makefile: BUILD_DIR, OBJ_DIR, Q, say, V, CLANG.
# Variables this file sets:
#   BPF_OUT        $(BUILD_DIR)/bpf
#   BPF_SKELS      the generated skeleton headers
#   BPFTOOL        bpftool binary (Debian installs it in /usr/sbin)
#   BPF_CFLAGS     flags of the BPF compile (override to add -DDEBUG etc.)
#   BPF_ARCH       __TARGET_ARCH_* for bpf_tracing.h (x86; arm64 with ARCH=arm64)
# and appends -I$(BPF_OUT) to CPPFLAGS and -lbpf -lelf -lz to LDLIBS.

BPF_OUT := $(BUILD_DIR)/bpf
BPFTOOL ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
BPF_ARCH ?= x86
BPF_CLANG ?= $(CLANG)
BPF_CFLAGS ?= -g -O2 -Wall -Werror
ifeq ($(ARCH),arm64)
BPF_BTF_KERNEL ?= debian-6.12
BPF_VMLINUX_BTF ?= $(BPF_OUT)/vmlinux.btf
BPF_VMLINUX_DEP := $(BPF_VMLINUX_BTF)
$(BPF_OUT)/vmlinux.btf: mk/kernel-btf.sh | $(DEPS_STAMP)
	$(call say,BTF,$@ ($(BPF_BTF_KERNEL) arm64))
	$(Q)mkdir -p $(@D)
	$(Q)VM_ARCH=arm64 BPFTOOL=$(BPFTOOL) bash mk/kernel-btf.sh $(BPF_BTF_KERNEL) $@ >/dev/null
else
BPF_VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_VMLINUX_DEP := $(wildcard $(BPF_VMLINUX_BTF))
endif

BPF_SRCS := $(sort $(wildcard bpf/*.bpf.c))
# The unit that defines the maps goes first: libbpf 1.1's linker takes the
# .maps section's BTF layout from the first object that has it, and an
# object that only declares the maps extern has every offset at 0
# ("map relo failed to find map for section '.maps'" at skeleton time).
BPF_UNIT_OBJS := $(BPF_OUT)/obj/sluice_maps.bpf.o \
  $(filter-out $(BPF_OUT)/obj/sluice_maps.bpf.o,$(BPF_SRCS:bpf/%.bpf.c=$(BPF_OUT)/obj/%.bpf.o))
BPF_LINKED := $(BPF_OUT)/sluice_events.bpf.o
BPF_SKELS := $(BPF_OUT)/sluice_events.skel.h

CPPFLAGS += -I$(BPF_OUT)
LDLIBS += -lbpf -lelf -lz

$(BPF_OUT)/vmlinux.h: $(BPF_VMLINUX_DEP) | $(DEPS_STAMP)
	$(call say,BTF,$@)
	$(Q)if [ ! -r $(BPF_VMLINUX_BTF) ]; then \
	  echo "sluice: $(BPF_VMLINUX_BTF) is missing: build on a kernel with CONFIG_DEBUG_INFO_BTF=y (or set BPF_VMLINUX_BTF=<path to a vmlinux with BTF>)" >&2; exit 1; fi
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(BPF_VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BPF_OUT)/obj/%.bpf.o: bpf/%.bpf.c $(BPF_OUT)/vmlinux.h
	$(call say,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -target bpf -D__TARGET_ARCH_$(BPF_ARCH) \
	  -I$(BPF_OUT) -Ibpf -MMD -MP -c $< -o $@

$(BPF_LINKED): $(BPF_UNIT_OBJS)
	$(call say,BPFLINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(BPF_OUT)/%.skel.h: $(BPF_OUT)/%.bpf.o
	$(call say,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(notdir $*) > $@

# The loader includes the skeleton; build it before any object of the BPF
# data source (the .d files take over once the objects exist).
BPF_USER_OBJS := $(patsubst %.cc,$(OBJ_DIR)/%.o,$(wildcard user/probes/bpf/*.cc))
$(BPF_USER_OBJS): $(BPF_SKELS)

bpf: $(BPF_SKELS)
.PHONY: bpf

-include $(BPF_UNIT_OBJS:.o=.d)
