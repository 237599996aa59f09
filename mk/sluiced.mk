# sluiced: readiness and status for systemd (Type=notify) through sd_notify,
# from Debian's libsystemd (libsystemd-dev). Only sluiced links it.
$(BUILD_DIR)/sluiced: LDLIBS += -lsystemd
