# SPDX-License-Identifier: GPL-2.0
# rxe_sr: top-level targets. The module itself is built by Kbuild (make module).
#
#   make run      set everything up, boot two guests, show rxe_sr, print the goodput table
#                 and a short QP sweep (1 and 1000 QPs, lossless and 1%, CPU per MB)
#   make bench    on the bench kernel (no Rust overflow checks; BENCH_VARIANT=default: the
#                 test kernel): make run, then the full QP sweep (1..5000 QPs, lossless and 1%, every
#                 scheme, CPU per MB, SR pool use), the RNR point (scripts/bench-rnr:
#                 SENDs to a receiver short of receives at 1% loss, every scheme) and the
#                 long-haul sweep (scripts/bench-wan: RTT 20-80 ms, loss and bursts)
#   make test     host cargo tests + the VM selftests; ends with `N passed, N failed, N skipped`
#   make deps     install Debian packages and bindgen (idempotent)
#   make kernel   the cached test kernel (VARIANT=debug for KASAN + lockdep, VARIANT=bench
#                 for make bench's)
#   make image    the cached guest root file system
#   make module   rxe_sr.ko against KDIR (default: the test kernel)
#   make host-test  cargo test only;  make vm-test [TESTS="a.sh b.sh"]  the VM selftests only
#   make install  rxe_sr.ko built and installed for KDIR (default: the running kernel's
#                 /lib/modules/$(uname -r)/build), depmod; INSTALL_MOD_PATH stages it
#   make dkms     the sources to /usr/src/rxe_sr-VERSION and DKMS add/build/install (the
#                 running kernel, or KDIR + KRELEASE); make dkms-remove takes it out again
#   make kernel-deb  linux-image and linux-headers .debs with CONFIG_RUST from KCONFIG
#                 (default: the running kernel's /boot/config-$(uname -r)); the headers
#                 build out-of-tree Rust modules (this one with KDIR=/usr/src/linux-headers-...)

SHELL := /bin/bash
export VARIANT ?= default

.PHONY: all deps kernel image module test host-test vm-test run bench clean install dkms \
	dkms-remove kernel-deb

all: module

deps:
	@bash scripts/setup

kernel: deps
	@bash scripts/build-kernel

image: deps
	@bash scripts/build-image

module: deps
	@KDIR=$(KDIR) bash scripts/build-module

host-test:
	cargo test --release

vm-test: deps
	@bash scripts/vm-test $(TESTS)

test: deps
	@bash scripts/test

run: deps
	@RESULT_COMMAND="make run" bash scripts/run-demo

bench: deps
	@RESULT_COMMAND="make bench" bash scripts/run-bench

install:
	@KDIR=$(KDIR) bash scripts/install-module

dkms:
	@KDIR=$(KDIR) KRELEASE=$(KRELEASE) bash scripts/dkms install

dkms-remove:
	@bash scripts/dkms remove

kernel-deb: deps
	@KCONFIG=$(KCONFIG) bash scripts/build-kernel-deb

clean:
	rm -rf target
	find . -path ./target -prune -o \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
		-o -name '.*.cmd' -o -name '*.d' \) -type f -print0 | xargs -0 rm -f
	rm -rf modules.order Module.symvers gen
