#!/usr/bin/env bash
# Turns the tree `make install PREFIX=/usr DESTDIR=STAGE` made into a Debian
# binary package, as debhelper would for this one package: binaries stripped,
# man pages and the changelog compressed, copyright, md5sums, the control
# file with Depends from dpkg-shlibdeps, maintainer scripts from mk/deb/.
#   mk/deb/build.sh STAGE OUT_DIR BUILD_DIR MAINTAINER
# Writes OUT_DIR/sluice_<version>_<arch>.deb and a link OUT_DIR/sluice.deb.
set -euo pipefail
stage=$(cd "$1" && pwd) out=$2 build_dir=$3 maintainer=$4
here=$(cd "$(dirname "$0")" && pwd)
version=$("$build_dir/sluice" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
doc=$stage/usr/share/doc/sluice

# What dh_strip, dh_compress and dh_installdocs would do.
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$stage"/usr/bin/* "$stage"/usr/sbin/* "$stage"/usr/lib/sluice/*.so
find "$stage/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9nf {} +
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: sluice"
  echo
  echo "Files: *"
  echo "Copyright: the sluice authors"
  echo "License: Expat"
  sed -e 's/^$/./' -e 's/^/ /' "$here/../../LICENSE"
} >"$doc/copyright"
{
  echo "sluice ($version) unstable; urgency=medium"
  echo
  echo "  * Built by make deb from $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo 'a source tree')."
  echo
  echo " -- $maintainer  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}")"
} | gzip -9n >"$doc/changelog.gz"

# Depends: the packages of the shared libraries the binaries and the plugin
# need (their ELF NEEDED entries), with the versions their symbols need. dpkg-shlibdeps wants
# a debian/control to read, so it runs in a scratch directory that has one
# (its warning that the binaries are not under debian/<package>/ is noise).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/debian"
printf 'Source: sluice\n\nPackage: sluice\nArchitecture: any\n' >"$scratch/debian/control"
depends=$(cd "$scratch" && dpkg-shlibdeps -O "$stage"/usr/bin/* "$stage"/usr/sbin/* "$stage"/usr/lib/sluice/*.so \
  2> >(grep -v "should already be installed in their package's directory" >&2) |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "mk/deb/build.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$stage/DEBIAN"
installed_size=$(du -sk --apparent-size --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$maintainer|" \
    -e "s|@INSTALLED_SIZE@|$installed_size|" -e "s|@DEPENDS@|$depends|" \
    "$here/control.in" >"$stage/DEBIAN/control"
# The postinst knows the sysusers.d and tmpfiles.d paths of the same prefix.
sed -f "$build_dir/init/.subst" "$here/postinst.in" >"$stage/DEBIAN/postinst"
install -m 0755 "$here/prerm" "$here/postrm" "$stage/DEBIAN/"
chmod 0755 "$stage/DEBIAN/postinst"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
  xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

deb=sluice_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/$deb" >/dev/null
ln -sfn "$deb" "$out/sluice.deb"
echo "  $out/$deb (Depends: $depends)"
