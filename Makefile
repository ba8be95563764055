# A thin wrapper over CMake. `make run` and `make test` are the README's Quick start.
BUILD ?= build
JOBS ?= $(shell nproc)
WERROR ?= $(if $(CI),ON,OFF)
# Full debug info (-g) makes every object ~20x larger and the build a third slower; CI keeps
# line tables only (-g1: backtraces still name file and line) to stay inside its time budget.
DEBUG_INFO ?= $(if $(CI),-g1,-g)
EXAMPLE ?= examples/graphs/layer_norm.json

.PHONY: all deps configure build run test bench clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG" -DWEFT_WERROR=$(WERROR) > $(BUILD).configure.log 2>&1 \
	  || (cat $(BUILD).configure.log; exit 1)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# weft's main job on one example: compile it, run it on the simulator, check it against the
# reference interpreter and show what the kernels did.
run: build
	$(BUILD)/tools/weft run $(EXAMPLE) --bind B=128 --random --seed 1 --check --counters

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/tools/weft bench --policy all

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
