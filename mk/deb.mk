# The Debian package, built from the installed tree with Debian's own tools
# (dpkg-shlibdeps, dpkg-deb); the files are in mk/deb/.
#
#   make deb         $(DEB_OUT)/sluice_<version>_<arch>.deb
#   make deb-check   make deb, then mk/deb/check.sh: the package's contents,
#                    its dependencies, `systemd-analyze verify` on its units
#                    and lintian (CI runs this)
#
# The tree is `make install PREFIX=/usr DESTDIR=$(DEB_STAGE)`: the package
# holds exactly what make install installs, with the paths it bakes in. Note
# that this rebuilds the objects that know the prefix (mk/install.mk), and a
# later plain `make` rebuilds them back for PREFIX=/usr/local.
#
# Variables: DEB_MAINTAINER (the control file's Maintainer).

DEB_OUT := $(BUILD_DIR)/deb
DEB_STAGE := $(DEB_OUT)/root
DEB_MAINTAINER ?= sluice developers <sluice@example.org>

deb: | $(DEPS_STAMP)
	$(Q)bash mk/ensure-deps.sh package
	$(Q)rm -rf $(DEB_STAGE)
	$(Q)$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(DEB_STAGE))
	$(call say,DEB,$(DEB_OUT))
	$(Q)bash mk/deb/build.sh $(DEB_STAGE) $(DEB_OUT) $(BUILD_DIR) "$(DEB_MAINTAINER)"

deb-check: deb
	$(Q)bash mk/deb/check.sh $(DEB_OUT)/sluice.deb

.PHONY: deb deb-check
