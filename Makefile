# chat-tui — build, run, test and benchmark.
# `make run` and `make test` install whatever is missing first (see `deps`).

SWIFT        ?= swift
PORT         ?= 6667
# Debian packages building and running need (make run installs only these)...
DEB_BUILD    := pkg-config libncurses-dev libsqlite3-dev libssl-dev
# ...and what the tests and the benchmarks add: the peers and tools they run (make test).
DEB_TEST     := ngircd inspircd irssi weechat-headless weechat-curses catgirl openssl tmux procps coreutils util-linux chromium chromium-driver sslscan groff-base man-db systemd
# Python modules the interop tests use, with the PyPI package that provides each.
PY_MODULES   := irc:irc pytest:pytest websockets:websockets selenium:selenium cryptography:cryptography

# Everything a test, soak, fuzz run or benchmark starts runs with a HOME, XDG folders and TMPDIR
# of its own (scripts/isolated.sh), never the user's own chat-tui history, config or pins.
ISOLATED     := sh scripts/isolated.sh

PREFIX       ?= /usr/local
DESTDIR      ?=

.PHONY: all deps deps-build build release run man install deb test test-swift test-interop test-sanitized bench fuzz soak clean

all: build

# What building and running need: the compiler's Debian libraries.
deps-build:
	@sh scripts/deps.sh "$(DEB_BUILD)" ""

# Everything the tests, the soak, fuzzing and the benchmarks need as well.
deps:
	@sh scripts/deps.sh "$(DEB_BUILD) $(DEB_TEST)" "$(PY_MODULES)"

build:
	$(SWIFT) build

release:
	$(SWIFT) build -c release --static-swift-stdlib --product chat-tui

run: deps-build release
	./.build/release/chat-tui --serve --port $(PORT)

# The binary, the man pages, the systemd unit and the commented example settings.
install: release
	install -D -m 755 .build/release/chat-tui $(DESTDIR)$(PREFIX)/bin/chat-tui
	install -D -m 644 man/chat-tui.1 $(DESTDIR)$(PREFIX)/share/man/man1/chat-tui.1
	install -D -m 644 man/chat-tui.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/chat-tui.conf.5
	sed 's|/usr/bin/chat-tui|$(PREFIX)/bin/chat-tui|' packaging/chat-tui.service > chat-tui.service.tmp
	install -D -m 644 chat-tui.service.tmp $(DESTDIR)$(PREFIX)/lib/systemd/system/chat-tui.service
	rm -f chat-tui.service.tmp
	install -D -m 644 packaging/server.conf $(DESTDIR)$(PREFIX)/share/doc/chat-tui/server.conf

# chat-tui_VERSION_ARCH.deb in .build/deb, with Debian's dpkg-deb.
deb: release
	sh scripts/deb.sh .build/release/chat-tui .build/deb

# The man pages, written by the program from its own tables (a test checks they are current).
man: deps-build
	$(SWIFT) build --product chat-tui
	./.build/debug/chat-tui man 1 > man/chat-tui.1
	./.build/debug/chat-tui man 5 > man/chat-tui.conf.5

test: deps
	$(SWIFT) build --build-tests
	# One test at a time: tests that wait on a socket (LineClient) block a thread of Swift's
	# cooperative pool, which has one thread per core; two at once on a 2-core machine starve
	# the client actors they wait for (10 s timeouts with no events). Sequential: ~50 s.
	$(ISOLATED) $(SWIFT) test --skip-build --no-parallel
	# The fuzz targets' corpora replayed, then mutated for 2 s each (make fuzz: libFuzzer).
	$(ISOLATED) sh -c 'for t in irc framer ctcp sasl client http websocket link; do ./.build/debug/chat-fuzz $$t Fuzz/corpus/$$t 2 || exit 1; done'
	# A short chaos soak (make soak: the long one): 0 lost, 0 duplicated, or it fails.
	$(ISOLATED) ./.build/debug/chat-soak --binary ./.build/debug/chat-tui --seconds 20 --clients 10 --raw 2 --pairs 1 --restart 6-9 --seed 1
	$(ISOLATED) python3 -m pytest -q --durations=12 tests/interop

fuzz: deps
	$(ISOLATED) sh scripts/fuzz.sh

# The unit and socket tests under AddressSanitizer with LeakSanitizer on, then ThreadSanitizer,
# each in a build directory of its own; the servers the tests start are the same sanitized build
# (found beside the test bundle). Leaks in the toolchain's or Debian's libraries, never ours, are
# named in scripts/lsan.supp with the reason.
test-sanitized: deps
	$(SWIFT) build --build-tests --sanitize=address --build-path .build/asan
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=1 \
		$(ISOLATED) $(SWIFT) test --skip-build --sanitize=address --build-path .build/asan --no-parallel
	$(SWIFT) build --build-tests --sanitize=thread --build-path .build/tsan
	$(ISOLATED) $(SWIFT) test --skip-build --sanitize=thread --build-path .build/tsan --no-parallel

# The chaos soak: 50 clients of ours and 10 raw ones through a fault-injecting proxy while the
# server is killed and started again (SOAK_SECONDS, 180 by default), then the canary: a
# recorded session replayed against the previous release (CANARY_BASE) and this one, diffed.
SOAK_SECONDS ?= 180
CANARY_BASE  ?= 790c79d
soak: deps
	$(SWIFT) build
	$(ISOLATED) ./.build/debug/chat-soak --binary ./.build/debug/chat-tui --seconds $(SOAK_SECONDS)
	$(ISOLATED) python3 scripts/canary.py --base $(CANARY_BASE) --new ./.build/debug/chat-tui

bench: deps release
	$(SWIFT) build -c release --static-swift-stdlib --product chat-bench
	$(ISOLATED) python3 bench/run.py
	$(ISOLATED) python3 bench/always_on_bench.py 10000 .build/release/chat-tui
	$(ISOLATED) python3 bench/webpush_bench.py .build/release/chat-tui

clean:
	rm -rf .build
