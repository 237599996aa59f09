# say TEXT: one "SLUICE-VM: TEXT" progress line on the console (busybox sh;
# sourced by /init and by guest/lib.sh).
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
