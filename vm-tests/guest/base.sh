# What /init and the scenarios' guest/lib.sh share (busybox sh, sourced by
# both): progress lines and time limits scaled by the guest's speed.

# say TEXT: one "SLUICE-VM: TEXT" progress line on the console.
#
# The line goes through the kernel log (/dev/kmsg), not through a tty: the
# kernel's console driver writes the log to the serial port by polling the
# UART (8250 and pl011 alike), so the line reaches the host even when the
# port's interrupt never arrives (a kernel that said "irq N: nobody cared ...
# Disabling IRQ" stalls every tty write, and /dev/console is a tty). Level 5
# (notice) is below the console loglevel /init makes sure of; the host strips
# the printk timestamp. A /dev/kmsg record holds at most ~976 bytes, hence
# the cut (busybox echo writes the line with one write(), one record).
say() {
  local line="SLUICE-VM: $*"
  echo "<5>${line:0:900}" >/dev/kmsg 2>/dev/null
}

# scaled SECS: SECS x the guest's speed scale (SLUICE_VM_SCALE, which /init
# measures at boot and exports; at least 1), rounded up to whole seconds.
# Every time limit in the guest is a generous base at scale 1 passed
# through this: a slow or loaded machine gets more time, and a limit only
# matters when something is broken.
scaled() {
  awk -v b="$1" -v s="${SLUICE_VM_SCALE:-1}" 'BEGIN { t = b * s; printf "%d\n", (t == int(t) ? t : int(t) + 1) }'
}
