#!/bin/bash
# The soft-RoCE VM of validation/rxe/run.sh (the repository's own copy, so that a clone needs nothing beside it):
# rxe_vm.sh WORKDIR [extra binaries...]: boot Debian's kernel under QEMU (TCG) with soft-RoCE (rdma_rxe on a dummy
# netdev and on lo) and run verbs smoke tests, then WORKDIR/user_test if present; the VM's console goes to WORKDIR/vm.log.
# needs: qemu-system-x86 busybox-static ibverbs-utils rdmacm-utils perftest iproute2
set -euo pipefail
W=$1; shift; mkdir -p "$W"; cd "$W"
KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')
[ -f kernel.deb ] || { apt-get download "$KPKG" >/dev/null 2>&1; mv ${KPKG}_*.deb kernel.deb; }
rm -rf k root; dpkg -x kernel.deb k
KV=$(ls k/lib/modules); MOD=k/lib/modules/$KV/kernel
mkdir -p root/{bin,proc,sys,dev,tmp,mods,lib64,etc/libibverbs.d,usr/lib/x86_64-linux-gnu/libibverbs}
cp /bin/busybox root/bin/
for a in $(root/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox root/bin/$a; done
# insmod order matters (no modules.dep); crc32_generic is required or 'rdma link add' fails with ENOENT
MODS="crc32_generic configfs ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe iw_cm ib_cm rdma_cm rdma_ucm dummy"
for m in $MODS; do cp "$(find $MOD -name $m.ko)" root/mods/; done
BINS="/usr/bin/ibv_devices /usr/bin/ibv_devinfo /usr/bin/ibv_rc_pingpong /usr/bin/rping /usr/bin/ib_write_bw /usr/bin/rdma /sbin/ip $*"
for b in $BINS; do rm -f root/bin/$(basename $b); cp -L $b root/bin/; done
P=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
cp $P root$P; cp /etc/libibverbs.d/rxe.driver root/etc/libibverbs.d/
for l in $(for b in $BINS $P; do ldd $b | awk '/=>/{print $3}'; done | sort -u); do mkdir -p root$(dirname $l); cp -L $l root$l; done
cp -L /lib64/ld-linux-x86-64.so.2 root/lib64/
cat > root/init <<INIT
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
for m in $MODS; do insmod /mods/\$m.ko || echo "insmod \$m failed"; done
ip link set lo up; ip link add dum0 type dummy; ip link set dum0 up
rdma link add rxe0 type rxe netdev dum0 && echo "RXE_ADD_OK dum0"
rdma link add rxelo type rxe netdev lo && echo "RXE_ADD_OK lo"
ibv_devices
LL=\$(ip -6 addr show dev dum0 | awk '/fe80/{print \$2}' | cut -d/ -f1)
ibv_rc_pingpong -d rxe0 -g 0 -n 200 >/tmp/s.log 2>&1 & sleep 1
ibv_rc_pingpong -d rxe0 -g 0 -n 200 127.0.0.1 && echo "RC_PINGPONG_OK"
ib_write_bw -d rxe0 -x 0 -s 65536 -n 200 >/tmp/bw.log 2>&1 & sleep 1
ib_write_bw -d rxe0 -x 0 -s 65536 -n 200 127.0.0.1 | grep -A1 "#bytes" && echo "WRITE_BW_OK"
rping -s -a "\$LL%dum0" -C 3 >/tmp/r.log 2>&1 & sleep 1
rping -c -a "\$LL%dum0" -C 3 && echo "RPING_OK"
[ -x /bin/user_test ] && { /bin/user_test; echo "USER_TEST_RC=\$?"; }
poweroff -f
INIT
chmod +x root/init
(cd root && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > ../initrd.gz)
timeout 600 qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp 1 -nographic -no-reboot -nic none \
  -kernel k/boot/vmlinuz-$KV -initrd initrd.gz -append "console=ttyS0 quiet panic=-1" | tee vm.log | grep -aE "OK|RC=|failed|error"
