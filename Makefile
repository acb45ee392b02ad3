# weft: the two commands. `make run` sets up, builds and runs the 4-rank demo;
# `make test` sets up, builds and runs every test (plus the unit tests under ASan+UBSan).
DEBIAN_PKGS := gcc g++ meson ninja-build pkg-config libsodium-dev libcmocka-dev python3 iproute2 \
	clang libclang-rt-14-dev libdpdk-dev tshark
BUILD ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 20
NP ?= 4

.PHONY: all deps build run test test-only asan fuzz clean

all: build

deps:
	@./scripts/deps.sh $(DEBIAN_PKGS)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: build
	$(BUILD)/tools/weftrun/weftrun -n $(NP) $(BUILD)/tools/demo/weft-demo

$(BUILD_ASAN)/build.ninja:
	meson setup $(BUILD_ASAN) --buildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dc_args=-fno-sanitize-recover=all -Ddebug_asserts=true

asan: deps $(BUILD_ASAN)/build.ninja
	ninja -C $(BUILD_ASAN)

# libFuzzer targets (tests/fuzz), clang with ASan+UBSan; each runs FUZZ_SECONDS in `make test`.
$(BUILD_FUZZ)/build.ninja:
	CC=clang CXX=clang++ meson setup $(BUILD_FUZZ) --buildtype=debugoptimized -Dfuzz=true \
		-Dtests=false -Db_sanitize=address,undefined -Db_lundef=false \
		-Dfuzz_seconds=$(FUZZ_SECONDS)

fuzz: deps $(BUILD_FUZZ)/build.ninja
	meson configure $(BUILD_FUZZ) -Dfuzz_seconds=$(FUZZ_SECONDS)
	ninja -C $(BUILD_FUZZ)

test: build asan fuzz
	@rm -f $(BUILD)/meson-logs/testlog.json $(BUILD_ASAN)/meson-logs/testlog.json \
		$(BUILD_FUZZ)/meson-logs/testlog.json
	-meson test -C $(BUILD) --print-errorlogs --num-processes 2
	-ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		meson test -C $(BUILD_ASAN) --suite unit --print-errorlogs --num-processes 2
	-meson test -C $(BUILD_FUZZ) --suite fuzz --print-errorlogs
	@python3 scripts/testsum.py $(BUILD)/meson-logs/testlog.json \
		$(BUILD_ASAN)/meson-logs/testlog.json $(BUILD_FUZZ)/meson-logs/testlog.json

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
