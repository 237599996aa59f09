# sluice query's PerfettoSQL standard library (included by the root
# Makefile): the modules under user/query/engine/stdlib/ compiled in, so that
# INCLUDE PERFETTO MODULE needs no file at run time. mk/embed-sql.sh writes
# them as initializers for user/query/engine/stdlib/stdlib_modules.cc, each
# named by its path under stdlib/ (sched/time_in_state.sql).
STDLIB_DIR := user/query/engine/stdlib
STDLIB_SQL := $(sort $(shell find $(STDLIB_DIR) -name '*.sql' 2>/dev/null))
STDLIB_INC := $(GEN_DIR)/$(STDLIB_DIR)/stdlib_files.inc
EXTRA_GENERATED += $(STDLIB_INC)
$(STDLIB_INC): $(STDLIB_SQL) mk/embed-sql.sh mk/stdlib.mk
	$(call say,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bash mk/embed-sql.sh --relative-to $(STDLIB_DIR) $(STDLIB_SQL) >$@.tmp && mv $@.tmp $@
