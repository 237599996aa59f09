# Man pages, generated from the binaries' own --help by help2man (Debian
# help2man), so that a page cannot say what the program does not: a changed
# usage text rebuilds the page with the binary.
#
#   make man      $(MAN_OUT)/sluice.1, sluice-<command>.1 (one per command),
#                 sluiced.8, sluice-probes.8, sluice-relay.8
#
# The NAME line and the sections --help does not have (SEE ALSO, FILES) come
# from docs/man/<page>.h2m. A command's page runs `sluice COMMAND --help`
# through a two-line wrapper named sluice-COMMAND, which help2man takes as the
# program's name. The version is `sluice --version`'s.

MAN_OUT := $(BUILD_DIR)/man
SLUICE_COMMANDS := record sessions clone trigger stats query export report doctor ftrace-formats
MAN1_PAGES := $(MAN_OUT)/sluice.1 $(SLUICE_COMMANDS:%=$(MAN_OUT)/sluice-%.1) $(MAN_OUT)/sluice-trace-processor.1
MAN8_PAGES := $(MAN_OUT)/sluiced.8 $(MAN_OUT)/sluice-probes.8 $(MAN_OUT)/sluice-relay.8
MAN_PAGES := $(MAN1_PAGES) $(MAN8_PAGES)
HELP2MAN ?= help2man

# Each page's program is a wrapper named after the page (help2man takes the
# program's name from it) that runs the real command and capitalizes the
# "usage:" our --help texts open with and turns a second usage line into
# "or: ...", which is what help2man turns into the SYNOPSIS section.
# man_wrapper PAGE_NAME BINARY [COMMAND]
define man_wrapper
$(MAN_OUT)/bin/$(1): $(BUILD_DIR)/$(2)
	$$(Q)mkdir -p $$(@D)
	$$(Q)printf '#!/bin/sh\n"%s" %s "$$$$@" 2>&1 | sed -e "s/^usage:/Usage:/" -e "%s"\n' \
	  "$$(abspath $$<)" "$(3)" 's/^       \(sluice[a-z-]* \)/  or: \1/' >$$@ && chmod +x $$@
endef
$(eval $(call man_wrapper,sluice,sluice))
$(foreach c,$(SLUICE_COMMANDS),$(eval $(call man_wrapper,sluice-$(c),sluice,$(c))))
$(eval $(call man_wrapper,sluice-trace-processor,sluice-trace-processor))
$(eval $(call man_wrapper,sluiced,sluiced))
$(eval $(call man_wrapper,sluice-probes,sluice-probes))
$(eval $(call man_wrapper,sluice-relay,sluice-relay))

$(MAN_OUT)/%.1 $(MAN_OUT)/%.8: $(MAN_OUT)/bin/% $(BUILD_DIR)/sluice docs/man/%.h2m | $(DEPS_STAMP)
	$(call say,HELP2MAN,$@)
	$(Q)$(HELP2MAN) --no-info --section=$(subst .,,$(suffix $@)) \
	  --version-string="$$($(BUILD_DIR)/sluice --version | awk '{print $$2}')" \
	  --include=docs/man/$*.h2m --output=$@.tmp $<
	$(Q)mv $@.tmp $@

man: $(MAN_PAGES)
.PHONY: man
