# sluice report's section SQL files (user/report/sql/*.sql), compiled into the
# binary so `sluice report` needs nothing installed, and installed as files
# (mk/install.mk) so users can run and edit them with `sluice query -f`.
REPORT_SQL := $(sort $(wildcard user/report/sql/*.sql))
REPORT_SQL_INC := $(GEN_DIR)/user/report/report_sql_files.inc
EXTRA_GENERATED += $(REPORT_SQL_INC)
$(REPORT_SQL_INC): $(REPORT_SQL) mk/embed-sql.sh
	$(call say,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bash mk/embed-sql.sh $(REPORT_SQL) >$@.tmp && mv $@.tmp $@
