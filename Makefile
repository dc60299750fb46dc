# auralog build. `make` builds build/auralog; `make test` runs every test;
# `make demo` starts a local cluster and shows its status.
# `make test SAN=1` builds into build-san/ with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs the same tests.

SAN ?=
ifeq ($(SAN),1)
B := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B := build
SANFLAGS :=
endif

CC ?= cc
PKGS := libuv libprotobuf-c lmdb libcjson zlib sqlite3 libgvc libsodium
CFLAGS ?= -O2 -g
# -fPIC: the same objects go into build/auralog.so (the SQLite extension).
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-missing-field-initializers -MMD -MP -fPIC \
          -Isrc -I$(B)/gen $(SANFLAGS)
LDFLAGS += $(SANFLAGS)

# Every dependency comes from Debian packages (scripts/deps.sh). The stamp
# makes a fresh machine install them once, before the first compile.
DEPS_STAMP := $(B)/.deps
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# http-parser (the dashboard's requests) has no pkg-config file.
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhttp_parser -lpthread -lm

GEN := $(B)/gen/auralog.pb-c.c
CORE_SRC := src/net/wire.c src/net/auth.c src/net/proof.c src/net/keyfile.c src/journal.c src/record.c src/bugs.c src/net/rpc.c src/net/net.c src/net/netio.c src/lib/log.c src/lib/addr.c src/lib/conf.c src/lib/proc.c src/lib/hist.c src/lib/kmap.c \
            $(sort $(wildcard src/node/*.c)) $(sort $(wildcard src/sim/*.c)) \
            src/coord/placement.c src/coord/meta.c src/coord/coord.c src/coord/roles.c src/coord/failover.c src/coord/segstats.c src/coord/hold.c src/coord/journal.c src/coord/jreplica.c src/coord/main.c src/coord/http.c src/coord/history.c \
            src/cli/cluster.c src/cli/members.c src/cli/fault.c src/cli/failover.c src/cli/fobench.c src/cli/status.c src/cli/status_log.c src/cli/sqlcli.c src/cli/sqlwords.c src/cli/locate.c src/cli/lab.c src/lab/history.c src/lab/check.c src/lab/check_reads.c src/lab/check_segment.c src/lab/check_replicas.c src/lab/check_measure.c src/lab/rundir.c src/lab/timeline.c src/lab/impl.c src/lab/handout.c src/lab/grade.c src/cli/viz.c src/cli/viz_sim.c \
            src/vfs/diff.c src/vfs/quorum.c src/vfs/cache.c src/vfs/recovery.c src/vfs/vcore.c src/vfs/volume.c src/vfs/ship.c src/vfs/read.c src/vfs/pagelsn.c src/vfs/report.c src/vfs/open.c \
            src/vfs/vfs.c src/vfs/journal.c src/vfs/vfsreg.c src/vfs/engine.c src/vfs/worker.c src/vfs/sandbox.c src/vfs/probe.c src/vfs/lease.c src/vfs/countvfs.c src/vfs/stages.c src/vfs/rapply.c src/vfs/rvol.c src/vfs/feed.c src/vfs/replica.c src/vfs/promote.c \
            src/bench/common.c src/bench/limit.c src/bench/breakdown.c src/bench/bench.c src/bench/report.c src/bench/group.c src/bench/note.c src/bench/workload.c src/bench/append.c src/bench/recovery.c src/bench/recsys.c src/bench/replicas.c
MAIN_SRC := src/main.c
CORE_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(CORE_SRC)) $(B)/obj/gen/auralog.pb-c.o \
            $(B)/obj/gen/dashboard.o
MAIN_OBJ := $(B)/obj/src/main.o

UNIT := log wire record segment gossip placement diff quorum recovery cache viz hist volume pagelsn lease kv simnet meta sim wirecheck wirebounds rectrunc kvdisk vizsim cores wcore netio auth authority pages hotlog scale rapply failover truncbound sqlwords
INTEG := mutants member cluster engine faults dataloss labs lab07 lab08 lab09 lab10 dashboard viz bench benchrec crash safety reads badinput auth sandbox pagecheck scale storage replica longread failover netns grade roles
UNIT_BIN := $(patsubst %,$(B)/tests/unit_%,$(UNIT))
INTEG_BIN := $(patsubst %,$(B)/tests/it_%,$(INTEG))
# make test runs integration binaries TEST_JOBS at a time (default 2;
# scripts/run-integration.sh), the longest first so that the two lanes
# end together.
TEST_JOBS ?= 2
INTEG_SLOW := failover storage replica labs bench crash
INTEG_RUN := $(patsubst %,$(B)/tests/it_%,$(INTEG_SLOW) $(filter-out $(INTEG_SLOW),$(INTEG)))

.PHONY: all test unit integration demo clean deps torture grade
all: $(B)/auralog $(B)/auralog.so

deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/deps.sh
	@bash scripts/deps.sh
	@mkdir -p $(B) && touch $@
# What only the tests need (a headless browser for the dashboard test).
TEST_DEPS_STAMP := $(B)/.deps-test
$(TEST_DEPS_STAMP): scripts/deps.sh
	@bash scripts/deps.sh --test
	@mkdir -p $(B) && touch $@

# The version benchmarks print in their conditions: rewritten only when
# `git describe` changes, so an unchanged tree rebuilds nothing.
$(B)/gen/version.h: FORCE
	@mkdir -p $(B)/gen
	@v="#define AURALOG_VERSION \"$$(git describe --always --dirty 2>/dev/null || echo unknown)\""; \
	  [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
$(B)/obj/src/bench/common.o: $(B)/gen/version.h
.PHONY: FORCE
FORCE:

$(GEN): proto/auralog.proto $(DEPS_STAMP)
	@mkdir -p $(B)/gen
	protoc-c --proto_path=proto --c_out=$(B)/gen proto/auralog.proto

$(B)/obj/%.o: %.c $(GEN) $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(B)/obj/gen/auralog.pb-c.o: $(GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

# The dashboard page goes into the binary as a byte array (coord/http.c
# serves it): one file to install, and the page always matches the server.
$(B)/gen/dashboard.c: tools/viz/dashboard.html $(DEPS_STAMP)
	@mkdir -p $(B)/gen
	xxd -i -n dashboard_html $< > $@.tmp && mv $@.tmp $@
$(B)/obj/gen/dashboard.o: $(B)/gen/dashboard.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libauralog.a: $(CORE_OBJ)
	ar rcs $@ $^

$(B)/auralog: $(MAIN_OBJ) $(B)/libauralog.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The loadable extension: .load build/auralog in the sqlite3 shell.
$(B)/auralog.so: $(B)/obj/src/vfs/ext.o $(B)/libauralog.a
	$(CC) $(LDFLAGS) -shared -o $@ $(B)/obj/src/vfs/ext.o -Wl,--whole-archive \
	  $(B)/libauralog.a -Wl,--no-whole-archive $(PKG_LIBS)

$(B)/tests/unit_%: tests/unit/test_%.c $(B)/libauralog.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libauralog.a $(PKG_LIBS) -lcmocka
$(B)/tests/it_%: tests/integration/test_%.c tests/integration/harness.c tests/integration/peer.c $(B)/libauralog.a $(B)/auralog
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -Itests/integration -o $@ $< \
	  tests/integration/harness.c tests/integration/peer.c $(B)/libauralog.a $(PKG_LIBS) -lcmocka
# The crash campaign is several files (tests/integration/crash.h).
$(B)/tests/it_crash: tests/integration/test_crash.c $(wildcard tests/integration/crash_*.c) \
  tests/integration/crash.h tests/integration/harness.c tests/integration/peer.c $(B)/libauralog.a $(B)/auralog
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -Itests/integration -o $@ $(filter %.c,$^) \
	  $(B)/libauralog.a $(PKG_LIBS) -lcmocka

# Unit tests drive the pure state machines; integration tests start real
# processes on loopback. Each binary prints cmocka's summary.
test: unit integration
unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done
# The extension is loaded into the system's sqlite3 shell and Python, which
# are not built with sanitizers: integration tests always use build/'s.
integration: $(TEST_DEPS_STAMP) $(INTEG_BIN) $(B)/auralog $(B)/auralog.so
	@[ "$(B)" = build ] || $(MAKE) --no-print-directory SAN= build/auralog.so
	@AURALOG_BIN=$(CURDIR)/$(B)/auralog AURALOG_SO=$(CURDIR)/build/auralog TEST_JOBS=$(TEST_JOBS) \
	  bash scripts/run-integration.sh $(B)/test-logs $(INTEG_RUN)

# The long campaigns: 10,000 simulator seeds of the default mix and 5,000
# with a read replica, failover and their faults (--faults replicas; the
# default mix has none of them), each with the rogue member, one process
# per core; then 500 crash points on real processes, 200 failovers, then
# the storage test's long runs (a 10-minute write workload, a volume the
# engine fills to 1,000 PGs), then every implement lab's mutants against
# every simulator seed of their lab (labs/mutants/).
SIM_SEEDS ?= 10000
SIM_REPLICA_SEEDS ?= 5000
SIM_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
torture: $(TEST_DEPS_STAMP) $(B)/tests/it_crash $(B)/tests/it_storage $(B)/tests/it_failover $(B)/auralog \
  $(B)/tests/it_mutants
	$(B)/auralog sim --seeds 1..$(SIM_SEEDS) --jobs $(SIM_JOBS)
	$(B)/auralog sim --seeds 1..$(SIM_REPLICA_SEEDS) --faults replicas --jobs $(SIM_JOBS)
	AURALOG_BIN=$(CURDIR)/$(B)/auralog AURALOG_CRASH_POINTS=500 $(B)/tests/it_crash
	AURALOG_BIN=$(CURDIR)/$(B)/auralog AURALOG_FAILOVERS=200 $(B)/tests/it_failover
	AURALOG_BIN=$(CURDIR)/$(B)/auralog AURALOG_STORAGE_SECONDS=600 AURALOG_STORAGE_FILL_PGS=1000 \
	  $(B)/tests/it_storage
	AURALOG_BIN=$(CURDIR)/$(B)/auralog AURALOG_MUTANTS_FULL=1 $(B)/tests/it_mutants

# The implement labs (labs/README.md): `make grade` grades every one,
# `make grade LAB=22` one. Always in build/ (the grader runs build/auralog).
GRADE_UNIT := diff segment quorum cache gossip recovery rectrunc wcore
grade:
	@$(MAKE) --no-print-directory SAN= build/auralog $(patsubst %,build/tests/unit_%,$(GRADE_UNIT))
	@build/auralog lab grade $(if $(LAB),$(LAB),all) --no-build

demo: $(B)/auralog
	@bash scripts/demo.sh $(B)/auralog

clean:
	rm -rf build build-san

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
