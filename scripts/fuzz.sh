#!/bin/sh
# make fuzz: builds chat-fuzz with libFuzzer and AddressSanitizer (its own build directory, so
# the normal build is left alone) and runs each target on its corpus for FUZZ_SECONDS
# (default 60), printing its executions per second; new inputs it finds stay in the corpus
# (commit them). A crash leaves crash-* / leak-* files in Fuzz/findings and stops the run.
# Then the server state's stateful fuzzer, with more steps and seeds than make test runs.
set -eu
SECONDS_EACH="${FUZZ_SECONDS:-60}"
TARGETS="${FUZZ_TARGETS:-irc framer ctcp sasl client http websocket link}"
swift build --product chat-fuzz --build-path .build/fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
BIN=.build/fuzz/debug/chat-fuzz
mkdir -p Fuzz/findings
for target in $TARGETS; do
    mkdir -p "Fuzz/corpus/$target"
    echo "== $target ($SECONDS_EACH s)"
    FUZZ_TARGET="$target" "$BIN" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="Fuzz/findings/$target-" "Fuzz/corpus/$target" 2>&1 \
        | grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|stat::average_exec_per_sec|ERROR|SUMMARY|panic|Fatal" || true
    if ls "Fuzz/findings/$target-"* >/dev/null 2>&1; then
        echo "fuzz: $target found a failure: $(ls Fuzz/findings/$target-*)"
        exit 1
    fi
done
echo "== the server state (stateful), ${FUZZ_STATE_STEPS:-20000} steps per seed"
CHAT_STATE_FUZZ_STEPS="${FUZZ_STATE_STEPS:-20000}" swift test --filter StateFuzzTests
